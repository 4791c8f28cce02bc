package aws

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"

	"github.com/schooner-ml/schooner/cloud"
)

// This file is the one place that knows EC2's error codes. Everything else asks classify and
// branches on the cloud error kinds.

type codeSet map[string]struct{}

func setOf(codes ...string) codeSet {
	s := codeSet{}
	for _, c := range codes {
		s[c] = struct{}{}
	}
	return s
}

func (s codeSet) has(code string) bool { _, ok := s[code]; return ok }

var (
	// capacityCodes: this offering cannot be had now; another zone, type or capacity type may
	// work. MaxSpotInstanceCountExceeded and SpotMaxPriceTooLow are about the spot market of
	// this offering rather than the account, so they steer elsewhere too (as in Karpenter).
	capacityCodes = setOf("InsufficientInstanceCapacity", "InsufficientHostCapacity",
		"InsufficientReservedInstanceCapacity", "InsufficientCapacity", "MaxSpotInstanceCountExceeded",
		"SpotMaxPriceTooLow", "UnfulfillableCapacity", "InsufficientCapacityOnHost")
	// quotaCodes: an account limit; only a quota increase or fewer instances help.
	quotaCodes = setOf("VcpuLimitExceeded", "InstanceLimitExceeded", "MaxSpotFleetRequestCountExceeded",
		"ResourceLimitExceeded")
	// throttleCodes: the request rate; the SDK retries these itself, so one reaching us means
	// its attempts ran out. Transient server faults are grouped here because the cure is the
	// same: the same call, later.
	throttleCodes = setOf("RequestLimitExceeded", "Throttling", "ThrottlingException",
		"EC2ThrottledException", "InternalError", "InternalFailure", "ServiceUnavailable", "Unavailable")
	// notFoundCodes: the instance is not there. A malformed id cannot name an instance either,
	// and callers treat unknown ids as gone.
	notFoundCodes = setOf("InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed")
	// invalidCodes: the request is wrong (or not allowed) and will stay wrong: bad parameters,
	// an AMI that does not exist, a type not sold in the zone, missing permissions.
	invalidCodes = setOf("InvalidParameterValue", "InvalidParameterCombination", "InvalidParameter",
		"MissingParameter", "Unsupported", "UnsupportedOperation", "InvalidAMIID.NotFound",
		"InvalidAMIID.Malformed", "InvalidAvailabilityZone", "IdempotentParameterMismatch",
		"InvalidAction", "NoSuchVersion", "UnauthorizedOperation", "AuthFailure", "OptInRequired",
		"Blocked", "InvalidClientTokenId", "SignatureDoesNotMatch")
)

// kindOf is the cloud error kind of an EC2 error code, or nil for a code it does not know.
func kindOf(code string) error {
	switch {
	case capacityCodes.has(code):
		return cloud.ErrInsufficientCapacity
	case quotaCodes.has(code):
		return cloud.ErrQuota
	case throttleCodes.has(code):
		return cloud.ErrThrottled
	case notFoundCodes.has(code):
		return cloud.ErrNotFound
	case invalidCodes.has(code):
		return cloud.ErrInvalidRequest
	}
	return nil
}

// classify turns an EC2 API error into a *cloud.Error carrying EC2's code and message.
// offering, when the call was about one (RunInstances), is attached so a capacity error marks
// exactly what was short. Errors that are not EC2 API errors (network, context) and codes it
// does not know are returned unchanged, the code kept in the message by the SDK.
func classify(err error, offering *cloud.OfferingKey) error {
	var api smithy.APIError
	if err == nil || !errors.As(err, &api) {
		return err
	}
	kind := kindOf(api.ErrorCode())
	if kind == nil {
		return err
	}
	return &cloud.Error{Kind: kind, Provider: providerName, Code: api.ErrorCode(), Message: api.ErrorMessage(), Offering: offering}
}

// noRetryOnShortage stops the SDK from retrying capacity and quota errors. EC2 sends
// InsufficientInstanceCapacity with HTTP 500, which the standard retryer retries; schooner
// would rather move to another offering at once than wait out backoffs on one that is empty.
var noRetryOnShortage = retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
	var api smithy.APIError
	if errors.As(err, &api) && (capacityCodes.has(api.ErrorCode()) || quotaCodes.has(api.ErrorCode())) {
		return aws.FalseTernary
	}
	return aws.UnknownTernary
})
