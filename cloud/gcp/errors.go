package gcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/api/googleapi"
	"google.golang.org/grpc/codes"

	"github.com/schooner-ml/schooner/cloud"
)

// This file is the one place where Compute Engine's error codes are read. GCE reports a
// failure in two ways: synchronously, as an HTTP error whose body carries errors[].reason
// (googleapi.Error, wrapped by the client in an apierror.APIError); or, for failures found
// while placing the VM, in the finished operation's error.errors[].code. Both spellings
// of a code are listed: GCE uses lowerCamel reasons in HTTP errors and UPPER_SNAKE codes
// in operations.

// capacityCodes mean the zone cannot place the VM now; another zone or shape may.
var capacityCodes = set(
	"ZONE_RESOURCE_POOL_EXHAUSTED",
	"ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS",
	"REGION_RESOURCE_POOL_EXHAUSTED",
	"RESOURCE_POOL_EXHAUSTED",
	"GPU_STOCKOUT",
	"STOCKOUT",
	"insufficientCapacity",
	"resourcePoolExhausted",
	"zoneResourcePoolExhausted",
	// UNSUPPORTED_OPERATION is seen when a spot VM is reclaimed while being created
	// (SkyPilot observed it); trying elsewhere is the right response there.
	"UNSUPPORTED_OPERATION",
)

// quotaCodes mean a project or region limit; the same account will not do better soon.
var quotaCodes = set("QUOTA_EXCEEDED", "quotaExceeded", "ZONAL_QUOTA_EXCEEDED", "limitExceeded")

// throttleCodes mean too many requests; the same call may succeed after a pause.
var throttleCodes = set(
	"rateLimitExceeded", "userRateLimitExceeded", "RATE_LIMIT_EXCEEDED",
	"RESOURCE_OPERATION_RATE_EXCEEDED", "operationRateExceeded",
)

// notFoundCodes mean the VM, zone, machine type or operation does not exist.
var notFoundCodes = set("notFound", "RESOURCE_NOT_FOUND", "NOT_FOUND")

// invalidCodes mean the request itself is wrong. alreadyExists is here too: asking for a
// name twice is the caller's mistake, never a reason to retry or go elsewhere.
var invalidCodes = set(
	"invalid", "badRequest", "required", "parseError", "invalidParameter", "conflict",
	"INVALID_FIELD_VALUE", "INVALID_ARGUMENT", "INVALID_USAGE", "alreadyExists", "RESOURCE_ALREADY_EXISTS",
	"forbidden", "PERMISSION_DENIED", "accessNotConfigured",
)

// kindOfCode maps one code or reason to a kind; nil when it says nothing known.
func kindOfCode(code string) error {
	switch {
	case capacityCodes[code]:
		return cloud.ErrInsufficientCapacity
	case quotaCodes[code]:
		return cloud.ErrQuota
	case throttleCodes[code]:
		return cloud.ErrThrottled
	case notFoundCodes[code]:
		return cloud.ErrNotFound
	case invalidCodes[code]:
		return cloud.ErrInvalidRequest
	}
	return nil
}

// kindOfHTTP maps an HTTP status when no code was recognised.
func kindOfHTTP(status int) error {
	switch {
	case status == http.StatusTooManyRequests:
		return cloud.ErrThrottled
	case status == http.StatusNotFound:
		return cloud.ErrNotFound
	case status == http.StatusBadRequest, status == http.StatusConflict,
		status == http.StatusUnauthorized, status == http.StatusForbidden:
		// 401 and 403 without a quota or rate reason are permission problems: retrying
		// will not help, so they are reported as bad requests.
		return cloud.ErrInvalidRequest
	}
	return nil
}

// kindOfGRPC maps the canonical status codes, for APIErrors that carry one.
func kindOfGRPC(c codes.Code) error {
	switch c {
	case codes.NotFound:
		return cloud.ErrNotFound
	case codes.InvalidArgument, codes.AlreadyExists, codes.PermissionDenied, codes.Unauthenticated, codes.FailedPrecondition:
		return cloud.ErrInvalidRequest
	case codes.ResourceExhausted:
		return cloud.ErrThrottled
	}
	return nil
}

// classify turns an error of a Compute API call into a *cloud.Error when it is one GCE
// reports, and leaves others (network, context, 5xx) as they are: those are worth
// retrying by whoever called.
func classify(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if _, ok := cloud.AsError(err); ok {
		return err
	}
	var codesSeen []string
	var kind error
	status, message := 0, ""
	var gerr *googleapi.Error
	if errors.As(err, &gerr) {
		status, message = gerr.Code, gerr.Message
		for _, it := range gerr.Errors {
			codesSeen = append(codesSeen, it.Reason)
		}
	}
	var aerr *apierror.APIError
	if errors.As(err, &aerr) {
		if r := aerr.Reason(); r != "" {
			codesSeen = append(codesSeen, r)
		}
		if message == "" {
			message = aerr.Message()
		}
		if status == 0 && aerr.HTTPCode() > 0 {
			status = aerr.HTTPCode()
		}
	}
	for _, c := range codesSeen {
		if kind = kindOfCode(c); kind != nil {
			return &cloud.Error{Kind: kind, Provider: ProviderName, Code: c, Message: message}
		}
	}
	code := strings.Join(codesSeen, ",")
	if kind = kindOfHTTP(status); kind != nil {
		if code == "" {
			code = http.StatusText(status)
		}
		return &cloud.Error{Kind: kind, Provider: ProviderName, Code: code, Message: message}
	}
	if aerr != nil && aerr.HTTPCode() < 0 {
		if kind = kindOfGRPC(aerr.GRPCStatus().Code()); kind != nil {
			return &cloud.Error{Kind: kind, Provider: ProviderName, Code: aerr.GRPCStatus().Code().String(), Message: message}
		}
	}
	return err
}

// operationError classifies the error a finished operation carries; nil when it
// succeeded. The first recognised code wins; the message keeps all of them.
func operationError(op *computepb.Operation) error {
	items := op.GetError().GetErrors()
	if len(items) == 0 {
		if s := int(op.GetHttpErrorStatusCode()); s != 0 && (s < 200 || s > 299) {
			if kind := kindOfHTTP(s); kind != nil {
				return &cloud.Error{Kind: kind, Provider: ProviderName, Code: http.StatusText(s), Message: op.GetHttpErrorMessage()}
			}
			return fmt.Errorf("gcp: operation %s failed: %d %s", op.GetName(), s, op.GetHttpErrorMessage())
		}
		return nil
	}
	var msgs []string
	var found *cloud.Error
	for _, it := range items {
		msgs = append(msgs, it.GetCode()+": "+it.GetMessage())
		if kind := kindOfCode(it.GetCode()); kind != nil && found == nil {
			found = &cloud.Error{Kind: kind, Provider: ProviderName, Code: it.GetCode()}
		}
	}
	if found == nil {
		// An unknown failure: classify by the HTTP status GCE attached. A server-side
		// status stays unclassified so the caller may retry; none at all is taken as a
		// bad request, since repeating it unchanged would fail the same way.
		status := int(op.GetHttpErrorStatusCode())
		kind := kindOfHTTP(status)
		if kind == nil && status >= 500 {
			return fmt.Errorf("gcp: operation %s failed: %s", op.GetName(), strings.Join(msgs, "; "))
		}
		if kind == nil {
			kind = cloud.ErrInvalidRequest
		}
		found = &cloud.Error{Kind: kind, Provider: ProviderName, Code: items[0].GetCode()}
	}
	found.Message = strings.Join(msgs, "; ")
	return found
}

func set(codes ...string) map[string]bool {
	m := make(map[string]bool, len(codes))
	for _, c := range codes {
		m[c] = true
	}
	return m
}
