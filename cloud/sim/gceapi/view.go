package gceapi

import (
	"github.com/schooner-ml/schooner/cloud/catalog"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/schooner-ml/schooner/cloud"
)

// spec is what insert asked for that the backend does not keep.
type spec struct {
	machineType       string
	accelerator       string
	accelCount        int
	spot              bool
	action            string // instanceTerminationAction of a spot VM: DELETE or STOP
	onHostMaintenance string
	// deleted: the VM was deleted through this face. The backend may still describe it
	// (terminated) for a while; GCE answers 404 at once.
	deleted bool
}

// specOf returns the spec of VM name, or one derived from the backend's instance when the
// VM was not created through this face (the simulator also starts VMs itself). Such VMs
// are taken to be deleted on preemption, which is how the backend lists them; h.mu must
// be held.
func (h *Handler) specOf(inst cloud.Instance) *spec {
	if sp, ok := h.specs[inst.ID]; ok {
		return sp
	}
	mt, acc, n := catalog.SplitAttachedName(inst.InstanceType)
	sp := &spec{machineType: mt, accelerator: acc, accelCount: n, spot: inst.Capacity == cloud.Spot, onHostMaintenance: "TERMINATE"}
	if sp.spot {
		sp.action = "DELETE"
	}
	return sp
}

// visible reports whether GCE would still show the VM: deleted VMs are gone at once, and a
// preempted spot VM is gone when its termination action is DELETE.
func (sp *spec) visible(inst cloud.Instance) bool {
	switch {
	case sp.deleted || inst.State == cloud.StateTerminated:
		return false
	case inst.State == cloud.StatePreempted:
		return sp.action == "STOP"
	}
	return true
}

// status maps the backend's normalised state onto GCE's lifecycle.
func status(s cloud.State) computepb.Instance_Status {
	switch s {
	case cloud.StatePending:
		return computepb.Instance_PROVISIONING
	case cloud.StateRunning:
		return computepb.Instance_RUNNING
	case cloud.StateStopping:
		return computepb.Instance_STOPPING
	}
	return computepb.Instance_TERMINATED
}

// render builds the GCE view of a backend instance.
func render(project string, inst cloud.Instance, sp *spec) *computepb.Instance {
	out := &computepb.Instance{
		Kind:              proto.String("compute#instance"),
		Id:                proto.Uint64(numericID("instance", inst.ID)),
		Name:              proto.String(inst.ID),
		Zone:              proto.String(zoneLink(project, inst.Zone)),
		MachineType:       proto.String(machineTypeLink(project, inst.Zone, sp.machineType)),
		Status:            proto.String(status(inst.State).String()),
		CreationTimestamp: proto.String(inst.LaunchedAt.Format(timeLayout)),
		SelfLink:          proto.String(instanceLink(project, inst.Zone, inst.ID)),
		Labels:            map[string]string{},
		Scheduling: &computepb.Scheduling{
			OnHostMaintenance: proto.String(sp.onHostMaintenance),
			AutomaticRestart:  proto.Bool(!sp.spot && sp.onHostMaintenance == "MIGRATE"),
			ProvisioningModel: proto.String(computepb.Scheduling_STANDARD.String()),
		},
	}
	if sp.spot {
		out.Scheduling.ProvisioningModel = proto.String(computepb.Scheduling_SPOT.String())
		out.Scheduling.Preemptible = proto.Bool(false)
		out.Scheduling.InstanceTerminationAction = proto.String(sp.action)
	}
	if sp.accelerator != "" {
		out.GuestAccelerators = []*computepb.AcceleratorConfig{{
			AcceleratorType:  proto.String(acceleratorTypeLink(project, inst.Zone, sp.accelerator)),
			AcceleratorCount: proto.Int32(int32(sp.accelCount)),
		}}
	}
	for k, v := range inst.Tags {
		if k == cloud.JobTag && v == "" {
			continue // the backend always sets the job tag; GCE shows only labels given
		}
		out.Labels[k] = v
	}
	if inst.State == cloud.StatePreempted && inst.Interruption != nil {
		out.LastStopTimestamp = proto.String(inst.Interruption.At.Format(timeLayout))
	}
	return out
}

// instanceFields resolves filter fields on a rendered VM.
func instanceFields(in *computepb.Instance) fields {
	table := fieldTable(map[string]func() string{
		"name":                         in.GetName,
		"id":                           func() string { return strconv.FormatUint(in.GetId(), 10) },
		"status":                       in.GetStatus,
		"zone":                         in.GetZone,
		"machineType":                  in.GetMachineType,
		"scheduling.provisioningModel": func() string { return in.GetScheduling().GetProvisioningModel() },
	})
	return func(path string) (string, bool) {
		if k, ok := strings.CutPrefix(path, "labels."); ok {
			v, has := in.GetLabels()[k]
			return v, has
		}
		return table(path)
	}
}
