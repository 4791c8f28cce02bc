package sim

import (
	"fmt"

	"github.com/schooner-ml/schooner/cloud"
)

// The provider codes the market puts in cloud.Error.Code, as the real clouds spell them, so
// the simulated EC2 and Compute APIs can pass them on unchanged.
const (
	CodeAWSInsufficientCapacity = "InsufficientInstanceCapacity"
	CodeAWSSpotQuota            = "MaxSpotInstanceCountExceeded"
	CodeAWSOnDemandQuota        = "VcpuLimitExceeded"
	CodeGCPResourceExhausted    = "ZONE_RESOURCE_POOL_EXHAUSTED"
	CodeGCPQuota                = "QUOTA_EXCEEDED"
	// CodeInvalidParameter, CodeUnknownZone, CodeUnknownInstanceType and CodeUnsupported
	// describe bad requests; Unsupported is EC2's word for a type not sold in a zone.
	CodeInvalidParameter    = "InvalidParameterValue"
	CodeUnknownZone         = "UnknownZone"
	CodeUnknownInstanceType = "UnknownInstanceType"
	CodeUnsupported         = "Unsupported"
)

func capacityError(o *offering, c cloud.CapacityType, got, want int) error {
	code := CodeAWSInsufficientCapacity
	if o.Provider == "gcp" {
		code = CodeGCPResourceExhausted
	}
	key := o.Key(c)
	return &cloud.Error{Kind: cloud.ErrInsufficientCapacity, Provider: o.Provider, Code: code,
		Message: fmt.Sprintf("got %d of %d %s %s in %s", got, want, c, o.InstanceType, o.Zone), Offering: &key}
}

func quotaError(o *offering, c cloud.CapacityType, n, held, limit int) error {
	code := CodeAWSOnDemandQuota
	switch {
	case o.Provider == "gcp":
		code = CodeGCPQuota
	case c == cloud.Spot:
		code = CodeAWSSpotQuota
	}
	return &cloud.Error{Kind: cloud.ErrQuota, Provider: o.Provider, Code: code,
		Message: fmt.Sprintf("%d %s need %d GPUs; %d of the quota of %d are in use",
			n, o.InstanceType, n*o.GPUsPerInstance, held, limit)}
}

func badRequest(provider, code, format string, args ...any) error {
	return &cloud.Error{Kind: cloud.ErrInvalidRequest, Provider: provider, Code: code, Message: fmt.Sprintf(format, args...)}
}

func notFound(provider, code, format string, args ...any) error {
	return &cloud.Error{Kind: cloud.ErrNotFound, Provider: provider, Code: code, Message: fmt.Sprintf(format, args...)}
}
