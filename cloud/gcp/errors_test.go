package gcp

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/api/googleapi"
	"google.golang.org/protobuf/proto"

	"github.com/schooner-ml/schooner/cloud"
)

func gapiErr(code int, reasons ...string) error {
	e := &googleapi.Error{Code: code, Message: "msg"}
	for _, r := range reasons {
		e.Errors = append(e.Errors, googleapi.ErrorItem{Reason: r, Message: "msg"})
	}
	return e
}

// wrapped is how the REST client returns errors: an apierror.APIError around the
// googleapi.Error.
func wrapped(err error) error {
	a, ok := apierror.FromError(err)
	if !ok {
		panic("not an API error")
	}
	return a
}

func TestClassifyCallErrors(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want error // nil: left unclassified
	}{
		{"429", gapiErr(429), cloud.ErrThrottled},
		{"rate limit reason on 403", gapiErr(403, "rateLimitExceeded"), cloud.ErrThrottled},
		{"user rate limit", wrapped(gapiErr(403, "userRateLimitExceeded")), cloud.ErrThrottled},
		{"quota reason", wrapped(gapiErr(403, "quotaExceeded")), cloud.ErrQuota},
		{"404", wrapped(gapiErr(404, "notFound")), cloud.ErrNotFound},
		{"404 without reason", gapiErr(404), cloud.ErrNotFound},
		{"400 invalid", wrapped(gapiErr(400, "invalid")), cloud.ErrInvalidRequest},
		{"400 badRequest", gapiErr(400, "badRequest"), cloud.ErrInvalidRequest},
		{"409 alreadyExists", gapiErr(409, "alreadyExists"), cloud.ErrInvalidRequest},
		{"403 forbidden", gapiErr(403, "forbidden"), cloud.ErrInvalidRequest},
		{"stockout reason", gapiErr(503, "ZONE_RESOURCE_POOL_EXHAUSTED"), cloud.ErrInsufficientCapacity},
		{"500 backendError", wrapped(gapiErr(500, "backendError")), nil},
		{"503 without reason", gapiErr(503), nil},
		{"network", errors.New("connection refused"), nil},
		{"wrapped in context", fmt.Errorf("getting x, %w", wrapped(gapiErr(404, "notFound"))), cloud.ErrNotFound},
	}
	for _, c := range cases {
		got := classify(c.err)
		ce, ok := cloud.AsError(got)
		if c.want == nil {
			if ok {
				t.Errorf("%s: classified as %v, want it left alone", c.name, ce.Kind)
			}
			continue
		}
		if !ok || !errors.Is(got, c.want) || ce.Provider != "gcp" {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	for _, err := range []error{nil, context.Canceled, &cloud.Error{Kind: cloud.ErrQuota}} {
		if got := classify(err); got != err {
			t.Errorf("%v should pass through, got %v", err, got)
		}
	}
	ce, _ := cloud.AsError(classify(gapiErr(403, "quotaExceeded")))
	if ce.Code != "quotaExceeded" || ce.Message != "msg" {
		t.Errorf("code and message should be kept: %+v", ce)
	}
}

func op(status int32, codes ...string) *computepb.Operation {
	o := &computepb.Operation{Name: proto.String("operation-1"), Status: computepb.Operation_DONE.Enum()}
	if status != 0 {
		o.HttpErrorStatusCode = proto.Int32(status)
		o.HttpErrorMessage = proto.String("STATUS")
	}
	if len(codes) > 0 {
		o.Error = &computepb.Error{}
		for _, c := range codes {
			o.Error.Errors = append(o.Error.Errors, &computepb.Errors{Code: proto.String(c), Message: proto.String(c + " happened")})
		}
	}
	return o
}

func TestClassifyOperationErrors(t *testing.T) {
	cases := []struct {
		name string
		op   *computepb.Operation
		want error
		code string
	}{
		{"stockout", op(503, "ZONE_RESOURCE_POOL_EXHAUSTED"), cloud.ErrInsufficientCapacity, "ZONE_RESOURCE_POOL_EXHAUSTED"},
		{"stockout with details", op(503, "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"), cloud.ErrInsufficientCapacity, "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"},
		{"region pool", op(503, "REGION_RESOURCE_POOL_EXHAUSTED"), cloud.ErrInsufficientCapacity, "REGION_RESOURCE_POOL_EXHAUSTED"},
		{"quota", op(403, "QUOTA_EXCEEDED"), cloud.ErrQuota, "QUOTA_EXCEEDED"},
		{"operation rate", op(403, "RESOURCE_OPERATION_RATE_EXCEEDED"), cloud.ErrThrottled, "RESOURCE_OPERATION_RATE_EXCEEDED"},
		{"not found", op(404, "RESOURCE_NOT_FOUND"), cloud.ErrNotFound, "RESOURCE_NOT_FOUND"},
		{"invalid field", op(400, "INVALID_FIELD_VALUE"), cloud.ErrInvalidRequest, "INVALID_FIELD_VALUE"},
		{"first known code wins", op(503, "SOMETHING_NEW", "ZONE_RESOURCE_POOL_EXHAUSTED"), cloud.ErrInsufficientCapacity, "ZONE_RESOURCE_POOL_EXHAUSTED"},
		{"unknown code on 400", op(400, "SOMETHING_NEW"), cloud.ErrInvalidRequest, "SOMETHING_NEW"},
		{"status only", op(429), cloud.ErrThrottled, "Too Many Requests"},
	}
	for _, c := range cases {
		err := operationError(c.op)
		ce, ok := cloud.AsError(err)
		if !ok || !errors.Is(err, c.want) || ce.Code != c.code {
			t.Errorf("%s: got %v, want %v (%s)", c.name, err, c.want, c.code)
		}
	}
	if err := operationError(op(0)); err != nil {
		t.Errorf("a clean operation: %v", err)
	}
	if err := operationError(op(500, "INTERNAL_ERROR")); err == nil {
		t.Error("an internal failure should be an error")
	} else if _, ok := cloud.AsError(err); ok {
		t.Errorf("an internal failure should stay unclassified: %v", err)
	}
	err := operationError(op(503, "SOMETHING_NEW", "ZONE_RESOURCE_POOL_EXHAUSTED"))
	if ce, _ := cloud.AsError(err); ce.Message != "SOMETHING_NEW: SOMETHING_NEW happened; ZONE_RESOURCE_POOL_EXHAUSTED: ZONE_RESOURCE_POOL_EXHAUSTED happened" {
		t.Errorf("message %q", ce.Message)
	}
}
