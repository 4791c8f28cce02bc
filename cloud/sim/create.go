package sim

import (
	"context"

	"github.com/schooner-ml/schooner/cloud"
)

// tokenResult remembers a Create that launched something by its client token, so a retry
// returns the same instances instead of launching more (EC2's ClientToken, GCE's requestId).
// A request that launched nothing is not remembered: retrying it is a new attempt.
type tokenResult struct {
	ids []string
	err error
}

// Create launches up to req.Count instances, pending until their provider's boot time has
// passed. Spot requests get what the offering's free capacity allows; on-demand is unlimited
// unless Config.OnDemandLimit caps it. A shortfall returns the instances obtained (nil when
// none) with a *cloud.Error of kind ErrInsufficientCapacity naming the offering. A launch
// that would exceed the provider's GPU quota fails whole with ErrQuota. Unknown zones and
// types are ErrNotFound; a non-positive count or unknown capacity type is ErrInvalidRequest.
func (m *Market) Create(ctx context.Context, req cloud.CreateRequest) ([]cloud.Instance, error) {
	if err := m.lockFor(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	if r, ok := m.tokens[req.ClientToken]; ok && req.ClientToken != "" {
		return m.snapshots(r.ids), r.err
	}
	o, err := m.offeringFor(req)
	if err != nil {
		return nil, err
	}
	n, short := req.Count, error(nil)
	avail := m.available(o, req.Capacity)
	if avail >= 0 && avail < n {
		n = avail
		short = capacityError(o, req.Capacity, n, req.Count)
	}
	if limit := o.params.MaxGPUs; limit > 0 && n > 0 {
		if held := m.gpusHeld[o.Provider]; held+n*o.GPUsPerInstance > limit {
			return nil, quotaError(o, req.Capacity, n, held, limit)
		}
	}
	var out []cloud.Instance
	var ids []string
	for range n {
		inst := m.launch(o, req)
		inst.token = req.ClientToken
		out = append(out, inst.snapshot())
		ids = append(ids, inst.ID)
	}
	m.remember(req.ClientToken, ids, short)
	return out, short
}

// offeringFor validates req and finds its offering.
func (m *Market) offeringFor(req cloud.CreateRequest) (*offering, error) {
	provider, knownZone := m.zones[req.Zone]
	if !knownZone {
		provider = m.types[req.InstanceType]
	}
	if provider == "" {
		provider = "sim"
	}
	switch {
	case req.Count <= 0:
		return nil, badRequest(provider, CodeInvalidParameter, "count must be positive, got %d", req.Count)
	case !req.Capacity.Valid():
		return nil, badRequest(provider, CodeInvalidParameter, "capacity type %q is neither %q nor %q",
			req.Capacity, cloud.Spot, cloud.OnDemand)
	case !knownZone:
		return nil, notFound(provider, CodeUnknownZone, "zone %q is not simulated", req.Zone)
	}
	if _, ok := m.types[req.InstanceType]; !ok {
		return nil, notFound(provider, CodeUnknownInstanceType, "instance type %q is not simulated", req.InstanceType)
	}
	o, ok := m.byKey[Key{Zone: req.Zone, InstanceType: req.InstanceType}]
	if !ok {
		return nil, notFound(provider, CodeUnsupported, "%s is not offered in %s", req.InstanceType, req.Zone)
	}
	return o, nil
}

// available is how many instances of capacity c o can give now; -1 means no limit.
func (m *Market) available(o *offering, c cloud.CapacityType) int {
	if c == cloud.Spot {
		return o.free()
	}
	if o.odLimit < 0 {
		return -1
	}
	return max(0, o.odLimit-o.onDemand)
}

// launch creates one pending instance of o and schedules its boot.
func (m *Market) launch(o *offering, req cloud.CreateRequest) *instance {
	tags := map[string]string{}
	for k, v := range req.Tags {
		tags[k] = v
	}
	tags[cloud.JobTag] = req.JobID
	inst := &instance{off: o, Instance: cloud.Instance{
		ID: m.ids.next(o.Provider), Provider: o.Provider, Region: o.Region, Zone: o.Zone,
		InstanceType: o.InstanceType, GPUType: o.GPUType, GPUs: o.GPUsPerInstance, Capacity: req.Capacity,
		State: cloud.StatePending, JobID: req.JobID, Tags: tags, LaunchedAt: m.now, PricePerHour: o.Price(req.Capacity),
	}}
	m.instances[inst.ID] = inst
	m.order = append(m.order, inst)
	if req.Capacity == cloud.Spot {
		o.spot = append(o.spot, inst)
	} else {
		o.onDemand++
	}
	m.gpusHeld[o.Provider] += inst.GPUs
	m.record(cloud.EventCreated, inst)
	m.queue.schedule(&item{at: m.now.Add(o.params.BootTime), act: actBoot, inst: inst})
	return inst
}

func (m *Market) remember(token string, ids []string, err error) {
	if token != "" && len(ids) > 0 {
		m.tokens[token] = tokenResult{ids: ids, err: err}
	}
}

func (m *Market) snapshots(ids []string) []cloud.Instance {
	var out []cloud.Instance
	for _, id := range ids {
		out = append(out, m.instances[id].snapshot())
	}
	return out
}
