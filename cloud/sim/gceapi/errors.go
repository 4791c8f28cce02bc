package gceapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/schooner-ml/schooner/cloud"
)

// Operation error codes the face reports, spelled as GCE spells them.
const (
	CodeZoneResourcePoolExhausted            = "ZONE_RESOURCE_POOL_EXHAUSTED"
	CodeZoneResourcePoolExhaustedWithDetails = "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"
	CodeQuotaExceeded                        = "QUOTA_EXCEEDED"
)

// apiError is a synchronous failure, written in the Google JSON error format that
// googleapi.CheckResponse parses into a *googleapi.Error.
type apiError struct {
	Code    int
	Status  string // the canonical RPC status name, e.g. NOT_FOUND
	Reason  string // errors[].reason, e.g. notFound
	Domain  string
	Message string
}

func (e *apiError) Error() string { return e.Reason + ": " + e.Message }

func apiNotFound(msg string) *apiError {
	return &apiError{Code: http.StatusNotFound, Status: "NOT_FOUND", Reason: "notFound", Domain: "global", Message: msg}
}

func apiInvalid(msg string) *apiError {
	return &apiError{Code: http.StatusBadRequest, Status: "INVALID_ARGUMENT", Reason: "invalid", Domain: "global", Message: msg}
}

func apiThrottled() *apiError {
	return &apiError{Code: http.StatusTooManyRequests, Status: "RESOURCE_EXHAUSTED", Reason: "rateLimitExceeded",
		Domain: "usageLimits", Message: "Rate Limit Exceeded"}
}

func apiInternal(msg string) *apiError {
	return &apiError{Code: http.StatusInternalServerError, Status: "INTERNAL", Reason: "backendError", Domain: "global", Message: msg}
}

// writeError writes err; anything that is not an *apiError is an internal error.
func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = apiInternal(err.Error())
	}
	type item struct {
		Message string `json:"message"`
		Domain  string `json:"domain"`
		Reason  string `json:"reason"`
	}
	body := map[string]any{"error": map[string]any{
		"code":    ae.Code,
		"message": ae.Message,
		"errors":  []item{{Message: ae.Message, Domain: ae.Domain, Reason: ae.Reason}},
		"status":  ae.Status,
	}}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(ae.Code)
	_ = json.NewEncoder(w).Encode(body)
}

// opFailure is a failure GCE reports inside a finished operation rather than as the reply
// to the call: capacity and quota, which are only known once the VM is being placed.
type opFailure struct {
	code, message string
	httpCode      int
	httpMessage   string
}

// classifyBackend turns a backend error into either a synchronous *apiError or an
// operation failure.
func (h *Handler) classifyBackend(c call, err error) (*apiError, *opFailure) {
	msg := err.Error()
	if ce, ok := cloud.AsError(err); ok && ce.Message != "" {
		msg = ce.Message
	}
	switch {
	case cloud.IsInsufficientCapacity(err):
		return nil, &opFailure{code: h.opts.StockoutCode, httpCode: http.StatusServiceUnavailable, httpMessage: "SERVICE UNAVAILABLE",
			message: "The zone '" + zonePath(c.project, c.zone) + "' does not have enough resources available to fulfill the request.  Try a different zone, or try again later."}
	case cloud.IsQuota(err):
		return nil, &opFailure{code: CodeQuotaExceeded, httpCode: http.StatusForbidden, httpMessage: "FORBIDDEN", message: "Quota exceeded: " + msg}
	case cloud.IsThrottled(err):
		return apiThrottled(), nil
	case cloud.IsNotFound(err):
		return apiNotFound(msg), nil
	case cloud.IsInvalidRequest(err):
		return apiInvalid(msg), nil
	}
	return apiInternal(msg), nil
}

// syncError is classifyBackend for calls that have no operation to carry a failure.
func (h *Handler) syncError(c call, err error) *apiError {
	ae, of := h.classifyBackend(c, err)
	if ae != nil {
		return ae
	}
	if of.httpCode == http.StatusForbidden {
		return &apiError{Code: of.httpCode, Status: "PERMISSION_DENIED", Reason: "quotaExceeded", Domain: "usageLimits", Message: of.message}
	}
	return &apiError{Code: of.httpCode, Status: "UNAVAILABLE", Reason: "resourceExhausted", Domain: "global", Message: of.message}
}
