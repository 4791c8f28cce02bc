package ec2api

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"

	"github.com/schooner-ml/schooner/cloud"
)

// apiError is an EC2 error reply: the code clients branch on, a message for people and the
// HTTP status EC2 sends with that code.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func errf(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func invalidParam(format string, args ...any) *apiError {
	return errf(http.StatusBadRequest, "InvalidParameterValue", format, args...)
}

func missing(name string) *apiError {
	return errf(http.StatusBadRequest, "MissingParameter", "The request must contain the parameter %s", name)
}

// ec2Codes lists, per kind of backend error, the EC2 codes that express it with their HTTP
// status. The first code is the default; a backend error whose own Code is in the list keeps
// it, so the market simulator can say MaxSpotInstanceCountExceeded where that is the truth.
// Capacity shortages are server errors in EC2 (HTTP 500), everything the caller got wrong is
// a client error (400), and throttling is 503.
var ec2Codes = []struct {
	kind  error
	codes []string
	// status per code; codes not listed use the first entry's
	status map[string]int
}{
	{cloud.ErrInsufficientCapacity,
		[]string{"InsufficientInstanceCapacity", "MaxSpotInstanceCountExceeded", "InsufficientHostCapacity", "InsufficientCapacity", "UnfulfillableCapacity", "SpotMaxPriceTooLow"},
		map[string]int{"InsufficientInstanceCapacity": 500, "InsufficientHostCapacity": 500, "InsufficientCapacity": 500,
			"MaxSpotInstanceCountExceeded": 400, "UnfulfillableCapacity": 400, "SpotMaxPriceTooLow": 400}},
	{cloud.ErrQuota, []string{"VcpuLimitExceeded", "InstanceLimitExceeded", "MaxSpotFleetRequestCountExceeded"}, nil},
	{cloud.ErrThrottled, []string{"RequestLimitExceeded"}, map[string]int{"RequestLimitExceeded": 503}},
	{cloud.ErrNotFound, []string{"InvalidInstanceID.NotFound", "Unsupported"}, nil},
	{cloud.ErrInvalidRequest, []string{"InvalidParameterValue", "InvalidParameterCombination", "MissingParameter", "Unsupported"}, nil},
}

// fromBackend turns an error of the backend into the EC2 error it stands for. notFoundCode,
// when set, is the code of a not-found error: what was not found depends on the action (an
// offering in RunInstances, an instance elsewhere).
func fromBackend(err error, notFoundCode string) *apiError {
	ce, _ := cloud.AsError(err)
	msg := err.Error()
	if ce != nil && ce.Message != "" {
		msg = ce.Message
	}
	for _, k := range ec2Codes {
		if !errors.Is(err, k.kind) {
			continue
		}
		code := k.codes[0]
		if k.kind == cloud.ErrNotFound && notFoundCode != "" {
			code = notFoundCode
		}
		if ce != nil {
			for _, c := range k.codes {
				if c == ce.Code {
					code = c
				}
			}
		}
		status := http.StatusBadRequest
		if s, ok := k.status[code]; ok {
			status = s
		}
		return &apiError{Status: status, Code: code, Message: msg}
	}
	return errf(http.StatusInternalServerError, "InternalError", "An internal error has occurred: %s", msg)
}

type errorResponse struct {
	XMLName   xml.Name    `xml:"Response"`
	Errors    []errorBody `xml:"Errors>Error"`
	RequestID string      `xml:"RequestID"`
}

type errorBody struct {
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

func writeError(w http.ResponseWriter, requestID string, e *apiError) {
	writeXML(w, e.Status, errorResponse{Errors: []errorBody{{Code: e.Code, Message: e.Message}}, RequestID: requestID})
}
