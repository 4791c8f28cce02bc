package aws

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go"

	"github.com/schooner-ml/schooner/cloud"
)

func TestClassifyTable(t *testing.T) {
	t.Parallel()
	cases := map[string]error{
		"InsufficientInstanceCapacity":         cloud.ErrInsufficientCapacity,
		"InsufficientHostCapacity":             cloud.ErrInsufficientCapacity,
		"InsufficientReservedInstanceCapacity": cloud.ErrInsufficientCapacity,
		"MaxSpotInstanceCountExceeded":         cloud.ErrInsufficientCapacity,
		"SpotMaxPriceTooLow":                   cloud.ErrInsufficientCapacity,
		"UnfulfillableCapacity":                cloud.ErrInsufficientCapacity,
		"InsufficientCapacity":                 cloud.ErrInsufficientCapacity,
		"VcpuLimitExceeded":                    cloud.ErrQuota,
		"InstanceLimitExceeded":                cloud.ErrQuota,
		"MaxSpotFleetRequestCountExceeded":     cloud.ErrQuota,
		"RequestLimitExceeded":                 cloud.ErrThrottled,
		"Throttling":                           cloud.ErrThrottled,
		"ThrottlingException":                  cloud.ErrThrottled,
		"InternalError":                        cloud.ErrThrottled,
		"InvalidInstanceID.NotFound":           cloud.ErrNotFound,
		"InvalidInstanceID.Malformed":          cloud.ErrNotFound,
		"InvalidParameterValue":                cloud.ErrInvalidRequest,
		"InvalidParameterCombination":          cloud.ErrInvalidRequest,
		"MissingParameter":                     cloud.ErrInvalidRequest,
		"Unsupported":                          cloud.ErrInvalidRequest,
		"InvalidAMIID.NotFound":                cloud.ErrInvalidRequest,
		"UnauthorizedOperation":                cloud.ErrInvalidRequest,
	}
	key := &cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: "p3.2xlarge", Zone: "us-east-1a"}
	for code, kind := range cases {
		// Wrapped the way the SDK returns it: operation error around the API error.
		api := &smithy.GenericAPIError{Code: code, Message: "msg of " + code}
		err := classify(&smithy.OperationError{ServiceID: "EC2", OperationName: "RunInstances", Err: api}, key)
		ce, ok := cloud.AsError(err)
		if !ok || !errors.Is(err, kind) || ce.Code != code || ce.Message != "msg of "+code || ce.Provider != "aws" || ce.Offering != key {
			t.Errorf("%s: got %#v, want kind %v", code, err, kind)
		}
		// Exactly one kind per code.
		for _, other := range []error{cloud.ErrInsufficientCapacity, cloud.ErrQuota, cloud.ErrThrottled, cloud.ErrNotFound, cloud.ErrInvalidRequest} {
			if other != kind && errors.Is(err, other) {
				t.Errorf("%s is also %v", code, other)
			}
		}
	}
}

func TestClassifyLeavesOtherErrorsAlone(t *testing.T) {
	t.Parallel()
	if classify(nil, nil) != nil {
		t.Error("nil classified")
	}
	plain := fmt.Errorf("dialing: %w", context.DeadlineExceeded)
	if got := classify(plain, nil); got != plain {
		t.Errorf("plain error became %v", got)
	}
	odd := &smithy.GenericAPIError{Code: "SomethingNew"}
	if got := classify(odd, nil); got != odd {
		t.Errorf("unknown code became %v", got)
	}
}

func TestNoRetryOnShortage(t *testing.T) {
	t.Parallel()
	r := newRetryer(Options{})
	for code, want := range map[string]bool{
		"InsufficientInstanceCapacity": false, "VcpuLimitExceeded": false,
		"RequestLimitExceeded": true, "InternalError": false, // InternalError: no status here, the SDK retries it by HTTP 500
	} {
		err := &smithy.GenericAPIError{Code: code}
		if got := r.IsErrorRetryable(err); got != want {
			t.Errorf("%s retryable %v, want %v", code, got, want)
		}
	}
	var _ aws.Retryer = r
}
