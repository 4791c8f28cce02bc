package gcp

import (
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/catalog"
)

// state maps GCE's lifecycle onto schooner's. TERMINATED is a stopped VM; whether it was
// preempted is decided from zone operations (see preempted.go).
func state(status string) cloud.State {
	switch status {
	case "PROVISIONING", "STAGING":
		return cloud.StatePending
	case "RUNNING", "REPAIRING":
		return cloud.StateRunning
	case "STOPPING", "SUSPENDING", "PENDING_STOP":
		return cloud.StateStopping
	case "TERMINATED", "STOPPED", "SUSPENDED":
		return cloud.StateTerminated
	}
	return cloud.StatePending
}

// convert describes a GCE VM as a cloud.Instance.
func (p *Provider) convert(in *computepb.Instance) cloud.Instance {
	zone := lastSegment(in.GetZone())
	acc, count := "", 0
	if gas := in.GetGuestAccelerators(); len(gas) > 0 {
		acc, count = lastSegment(gas[0].GetAcceleratorType()), int(gas[0].GetAcceleratorCount())
	}
	shape := p.shapeNamed(lastSegment(in.GetMachineType()), acc, count)
	capacity := cloud.OnDemand
	if s := in.GetScheduling(); s.GetProvisioningModel() == computepb.Scheduling_SPOT.String() || s.GetPreemptible() {
		capacity = cloud.Spot
	}
	inst := cloud.Instance{
		ID: in.GetName(), Provider: ProviderName, Region: catalog.RegionOf(ProviderName, zone), Zone: zone,
		InstanceType: shape.Name, GPUType: shape.GPUType, GPUs: shape.GPUs, Capacity: capacity,
		State: state(in.GetStatus()), JobID: in.GetLabels()[cloud.JobTag], Tags: in.GetLabels(),
	}
	if t, err := time.Parse(time.RFC3339, in.GetCreationTimestamp()); err == nil {
		inst.LaunchedAt = t
	}
	if o, ok := p.offering(zone, shape.Name); ok {
		inst.PricePerHour = o.Price(capacity)
	}
	return inst
}

// preempt marks inst as reclaimed at the time GCE recorded.
func preempt(inst *cloud.Instance, at time.Time) {
	inst.State = cloud.StatePreempted
	inst.Interruption = &cloud.Interruption{Kind: cloud.Preempted, InstanceID: inst.ID, Zone: inst.Zone, Deadline: at, At: at}
}
