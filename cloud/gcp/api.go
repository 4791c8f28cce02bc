package gcp

import (
	"context"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/googleapis/gax-go/v2"
)

// InstancesAPI is the part of compute.InstancesClient the provider uses, with the SDK's own
// method signatures so the real client satisfies it as is. The SDK's *compute.Operation and
// iterators cannot be built outside the SDK, so tests stand a real client against the
// simulator's Compute face (cloud/sim/gceapi) rather than an in-memory double.
type InstancesAPI interface {
	Insert(ctx context.Context, req *computepb.InsertInstanceRequest, opts ...gax.CallOption) (*compute.Operation, error)
	Get(ctx context.Context, req *computepb.GetInstanceRequest, opts ...gax.CallOption) (*computepb.Instance, error)
	Delete(ctx context.Context, req *computepb.DeleteInstanceRequest, opts ...gax.CallOption) (*compute.Operation, error)
	List(ctx context.Context, req *computepb.ListInstancesRequest, opts ...gax.CallOption) *compute.InstanceIterator
}

// ZoneOperationsAPI is the part of compute.ZoneOperationsClient the provider uses: polling
// the operations it started, and listing preemptions.
type ZoneOperationsAPI interface {
	Get(ctx context.Context, req *computepb.GetZoneOperationRequest, opts ...gax.CallOption) (*computepb.Operation, error)
	List(ctx context.Context, req *computepb.ListZoneOperationsRequest, opts ...gax.CallOption) *compute.OperationIterator
}

var (
	_ InstancesAPI      = (*compute.InstancesClient)(nil)
	_ ZoneOperationsAPI = (*compute.ZoneOperationsClient)(nil)
)
