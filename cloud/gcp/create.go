package gcp

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/catalog"
)

// Create inserts req.Count VMs, one insert per VM as GCE requires for plain VMs, up to
// Options.CreateParallelism at a time since each insert takes seconds to finish. Each VM
// stands alone: VMs that were placed are returned with the error of those that were not,
// so a stockout keeps what was got. After a capacity or quota failure, inserts not yet
// started are not sent; they are part of the shortfall.
func (p *Provider) Create(ctx context.Context, req cloud.CreateRequest) ([]cloud.Instance, error) {
	if err := p.validate(req); err != nil {
		return nil, err
	}
	shape := p.shapeOf(req.InstanceType)
	key := cloud.OfferingKey{Capacity: req.Capacity, InstanceType: req.InstanceType, Zone: req.Zone}
	type result struct {
		inst    cloud.Instance
		err     error
		skipped bool
	}
	results := make([]result, req.Count)
	var stop atomic.Bool
	sem := make(chan struct{}, p.opts.CreateParallelism)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if stop.Load() {
				results[i].skipped = true
				return
			}
			inst, err := p.createOne(ctx, req, shape, i+1)
			if cloud.IsInsufficientCapacity(err) || cloud.IsQuota(err) {
				stop.Store(true)
			}
			results[i] = result{inst: inst, err: err}
		})
	}
	wg.Wait()
	got := make([]cloud.Instance, 0, req.Count)
	var firstErr error
	for _, r := range results {
		switch {
		case r.err != nil && firstErr == nil:
			firstErr = r.err
		case !r.skipped && r.err == nil:
			got = append(got, r.inst)
		}
	}
	if firstErr != nil {
		return got, fmt.Errorf("creating %d %s %s in %s (got %d), %w", req.Count, req.Capacity, req.InstanceType, req.Zone, len(got), withOffering(firstErr, key))
	}
	return got, nil
}

func (p *Provider) validate(req cloud.CreateRequest) error {
	bad := func(msg string) error {
		return &cloud.Error{Kind: cloud.ErrInvalidRequest, Provider: ProviderName, Code: "invalidCreateRequest", Message: msg}
	}
	switch {
	case req.Count <= 0:
		return bad(fmt.Sprintf("count must be positive, got %d", req.Count))
	case !req.Capacity.Valid():
		return bad(fmt.Sprintf("capacity must be %q or %q, got %q", cloud.Spot, cloud.OnDemand, req.Capacity))
	case req.Zone == "":
		return bad("zone is required")
	case req.InstanceType == "":
		return bad("instance type is required")
	}
	return nil
}

// withOffering names the offering that ran short on a capacity error, so the caller's
// unavailable-offerings cache marks exactly it.
func withOffering(err error, key cloud.OfferingKey) error {
	ce, ok := cloud.AsError(err)
	if !ok || !cloud.IsInsufficientCapacity(err) || ce.Offering != nil {
		return err
	}
	cp := *ce
	cp.Offering = &key
	return &cp
}

// createOne inserts VM n and waits for it. A throttled insert call is repeated under the
// same request id, since GCE did not take it; an operation that failed for throttling
// (RESOURCE_OPERATION_RATE_EXCEEDED) is inserted again under a new request id, since GCE
// remembers the failed one.
func (p *Provider) createOne(ctx context.Context, req cloud.CreateRequest, shape catalog.InstanceType, n int) (cloud.Instance, error) {
	name := instanceName(p.opts.NamePrefix, req.JobID, req.ClientToken, n)
	body := p.instanceBody(req, shape, name)
	b := backoff{r: p.opts.Retry}
	for attempt := 1; ; attempt++ {
		ir := &computepb.InsertInstanceRequest{Project: p.opts.Project, Zone: req.Zone, InstanceResource: body}
		if rid := requestID(req.ClientToken, n, attempt); rid != "" {
			ir.RequestId = proto.String(rid)
		}
		op, err := retry(ctx, p.opts.Retry, func(int) (*compute.Operation, error) { return p.inst.Insert(ctx, ir) })
		if err != nil {
			return cloud.Instance{}, err
		}
		done, err := p.wait(ctx, req.Zone, op)
		if cloud.IsThrottled(err) && attempt < p.opts.Retry.Attempts && b.pause(ctx) {
			continue
		}
		if err != nil {
			return cloud.Instance{}, err
		}
		// The operation names the VM it made: GCE keeps the requested name, the
		// simulator uses its own instance id.
		created := name
		if t := lastSegment(done.GetTargetLink()); t != "" {
			created = t
		}
		return p.describeCreated(ctx, req, shape, created), nil
	}
}

// describeCreated reads the new VM back for its state and launch time; if that read fails,
// the VM exists all the same, so it is described from the request.
func (p *Provider) describeCreated(ctx context.Context, req cloud.CreateRequest, shape catalog.InstanceType, name string) cloud.Instance {
	in, err := p.get(ctx, req.Zone, name)
	if err == nil {
		inst := p.convert(in)
		p.remember(inst)
		return inst
	}
	inst := cloud.Instance{
		ID: name, Provider: ProviderName, Region: catalog.RegionOf(ProviderName, req.Zone), Zone: req.Zone,
		InstanceType: req.InstanceType, GPUType: shape.GPUType, GPUs: shape.GPUs, Capacity: req.Capacity,
		State: cloud.StatePending, JobID: labelValue(req.JobID), Tags: p.labels(req), LaunchedAt: p.opts.Now(),
	}
	if o, ok := p.offering(req.Zone, req.InstanceType); ok {
		inst.PricePerHour = o.Price(req.Capacity)
	}
	p.remember(inst)
	return inst
}

// labels are the request's tags and the job label, folded into GCE's label alphabet.
func (p *Provider) labels(req cloud.CreateRequest) map[string]string {
	out := map[string]string{}
	for k, v := range req.Tags {
		out[labelKey(k)] = labelValue(v)
	}
	out[cloud.JobTag] = labelValue(req.JobID)
	return out
}

// instanceBody is the VM to insert. GPU VMs cannot live-migrate, so they terminate on host
// maintenance; spot VMs are deleted when preempted, so a reclaimed VM costs nothing while
// schooner notices.
func (p *Provider) instanceBody(req cloud.CreateRequest, shape catalog.InstanceType, name string) *computepb.Instance {
	in := &computepb.Instance{
		Name:        proto.String(name),
		MachineType: proto.String("zones/" + req.Zone + "/machineTypes/" + shape.MachineType),
		Labels:      p.labels(req),
		Disks: []*computepb.AttachedDisk{{
			Boot: proto.Bool(true), AutoDelete: proto.Bool(true),
			InitializeParams: &computepb.AttachedDiskInitializeParams{
				SourceImage: proto.String(p.opts.Image), DiskSizeGb: proto.Int64(p.opts.DiskSizeGB),
			},
		}},
		NetworkInterfaces: []*computepb.NetworkInterface{{
			Network:       proto.String(p.opts.Network),
			AccessConfigs: []*computepb.AccessConfig{{Name: proto.String("External NAT"), Type: proto.String("ONE_TO_ONE_NAT")}},
		}},
		Scheduling: &computepb.Scheduling{},
	}
	if shape.AcceleratorType != "" && shape.AcceleratorCount > 0 {
		in.GuestAccelerators = []*computepb.AcceleratorConfig{{
			AcceleratorType:  proto.String("zones/" + req.Zone + "/acceleratorTypes/" + shape.AcceleratorType),
			AcceleratorCount: proto.Int32(int32(shape.AcceleratorCount)),
		}}
	}
	if shape.GPUs > 0 || len(in.GuestAccelerators) > 0 {
		in.Scheduling.OnHostMaintenance = proto.String(computepb.Scheduling_TERMINATE.String())
	}
	if req.Capacity == cloud.Spot {
		in.Scheduling.ProvisioningModel = proto.String(computepb.Scheduling_SPOT.String())
		in.Scheduling.InstanceTerminationAction = proto.String(computepb.Scheduling_DELETE.String())
		in.Scheduling.OnHostMaintenance = proto.String(computepb.Scheduling_TERMINATE.String())
		in.Scheduling.AutomaticRestart = proto.Bool(false)
	}
	if p.opts.StartupScript != "" {
		in.Metadata = &computepb.Metadata{Items: []*computepb.Items{{Key: proto.String("startup-script"), Value: proto.String(p.opts.StartupScript)}}}
	}
	return in
}
