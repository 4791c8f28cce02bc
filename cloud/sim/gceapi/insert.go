package gceapi

import (
	"context"
	"fmt"
	"github.com/schooner-ml/schooner/cloud/catalog"
	"net/http"

	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/schooner-ml/schooner/cloud"
)

// insertInstance creates one VM. Like GCE it answers with a running operation; capacity
// and quota failures surface when the operation is read, DONE with an error.
func (h *Handler) insertInstance(r *http.Request, c call) (any, error) {
	req := &computepb.Instance{}
	if err := readMessage(r, req); err != nil {
		return nil, err
	}
	rid := r.URL.Query().Get("requestId")
	if op := h.byRequestID(rid); op != nil {
		return op.proto(c.project, false), nil
	}
	sp, shape, err := h.parseInsert(r.Context(), c, req)
	if err != nil {
		return nil, err
	}
	capacity := cloud.OnDemand
	if sp.spot {
		capacity = cloud.Spot
	}
	got, err := h.b.Create(r.Context(), cloud.CreateRequest{
		JobID: req.GetLabels()[cloud.JobTag], Zone: c.zone, InstanceType: shape, Capacity: capacity,
		Count: 1, Tags: req.GetLabels(), ClientToken: rid,
	})
	var failure *opFailure
	switch {
	case err != nil && len(got) == 0:
		var ae *apiError
		if ae, failure = h.classifyBackend(c, err); ae != nil {
			return nil, ae
		}
	case len(got) == 0:
		return nil, apiInternal("backend created no instance")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	target := req.GetName()
	if failure == nil {
		target = got[0].ID
		h.specs[target] = sp
	}
	op := h.newOperation(c.zone, "insert", target, failure)
	if rid != "" {
		h.ops.requestID[rid] = op
		op.requestID = rid
	}
	return op.proto(c.project, true), nil
}

// byRequestID returns the operation an earlier insert with the same requestId started, so a
// retried insert does not create a second VM (GCE keeps request ids for an hour at least).
func (h *Handler) byRequestID(rid string) *operation {
	if rid == "" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ops.requestID[rid]
}

// parseInsert validates an insert body the way GCE does and returns the VM's spec and the
// backend shape name.
func (h *Handler) parseInsert(ctx context.Context, c call, req *computepb.Instance) (*spec, string, error) {
	if !nameRE.MatchString(req.GetName()) {
		return nil, "", apiInvalid(fmt.Sprintf("Invalid value for field 'resource.name': '%s'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'", req.GetName()))
	}
	mtLink := req.GetMachineType()
	if mtLink == "" {
		return nil, "", apiInvalid("Invalid value for field 'resource.machineType': ''. Machine type must be specified.")
	}
	if z := segmentAfter(mtLink, "zones"); z != "" && z != c.zone {
		return nil, "", apiInvalid(fmt.Sprintf("Invalid value for field 'resource.machineType': '%s'. Machine type must be in zone '%s'.", mtLink, c.zone))
	}
	sp := &spec{machineType: lastSegment(mtLink)}
	if err := parseAccelerators(c, req, sp); err != nil {
		return nil, "", err
	}
	for k, v := range req.GetLabels() {
		if !labelKeyRE.MatchString(k) || !labelValueRE.MatchString(v) {
			return nil, "", apiInvalid(fmt.Sprintf("Invalid value for field 'resource.labels': '%s=%s'. Label keys and values may contain only lowercase letters, digits, '-' and '_'; keys start with a letter.", k, v))
		}
	}
	if err := parseScheduling(req.GetScheduling(), sp); err != nil {
		return nil, "", err
	}
	offers, err := h.zoneOfferings(ctx, c)
	if err != nil {
		return nil, "", err
	}
	shape := catalog.AttachedName(sp.machineType, sp.accelerator, sp.accelCount)
	o, bad := findShape(offers, shape)
	switch bad {
	case "machineType":
		return nil, "", apiInvalid(fmt.Sprintf("Invalid value for field 'resource.machineType': '%s'. Machine type with name '%s' does not exist in zone '%s'.", mtLink, sp.machineType, c.zone))
	case "guestAccelerators":
		return nil, "", apiInvalid(fmt.Sprintf("Invalid value for field 'resource.guestAccelerators': accelerator '%s' x%d is not available with machine type '%s' in zone '%s'.", sp.accelerator, sp.accelCount, sp.machineType, c.zone))
	}
	if o.GPUsPerInstance > 0 && sp.onHostMaintenance != "TERMINATE" {
		return nil, "", apiInvalid("Instances with guest accelerators do not support live migration.")
	}
	return sp, shape, nil
}

func parseAccelerators(c call, req *computepb.Instance, sp *spec) error {
	accs := req.GetGuestAccelerators()
	if len(accs) == 0 {
		return nil
	}
	if len(accs) > 1 {
		return apiInvalid("Invalid value for field 'resource.guestAccelerators': only one accelerator type per instance is supported.")
	}
	link := accs[0].GetAcceleratorType()
	if z := segmentAfter(link, "zones"); z != "" && z != c.zone {
		return apiInvalid(fmt.Sprintf("Invalid value for field 'resource.guestAccelerators[0].acceleratorType': '%s'. Accelerator type must be in zone '%s'.", link, c.zone))
	}
	if link == "" || accs[0].GetAcceleratorCount() < 1 {
		return apiInvalid("Invalid value for field 'resource.guestAccelerators[0]': an accelerator type and a positive count are required.")
	}
	sp.accelerator, sp.accelCount = lastSegment(link), int(accs[0].GetAcceleratorCount())
	return nil
}

// parseScheduling fills the scheduling fields of sp with GCE's defaults: spot VMs stop on
// preemption unless told to delete, and are never live-migrated; standard VMs migrate
// unless told to terminate.
func parseScheduling(s *computepb.Scheduling, sp *spec) error {
	switch pm := s.GetProvisioningModel(); pm {
	case "", computepb.Scheduling_STANDARD.String():
		sp.spot = s.GetPreemptible()
	case computepb.Scheduling_SPOT.String():
		sp.spot = true
	default:
		return apiInvalid(fmt.Sprintf("Invalid value for field 'resource.scheduling.provisioningModel': '%s'.", pm))
	}
	sp.onHostMaintenance = "MIGRATE"
	if sp.spot {
		sp.onHostMaintenance = "TERMINATE"
	}
	switch m := s.GetOnHostMaintenance(); m {
	case "":
	case "MIGRATE", "TERMINATE":
		if sp.spot && m == "MIGRATE" {
			return apiInvalid("Invalid value for field 'resource.scheduling.onHostMaintenance': 'MIGRATE'. Spot VMs cannot be live-migrated.")
		}
		sp.onHostMaintenance = m
	default:
		return apiInvalid(fmt.Sprintf("Invalid value for field 'resource.scheduling.onHostMaintenance': '%s'.", m))
	}
	if !sp.spot {
		return nil
	}
	switch a := s.GetInstanceTerminationAction(); a {
	case "":
		sp.action = "STOP"
	case "STOP", "DELETE":
		sp.action = a
	default:
		return apiInvalid(fmt.Sprintf("Invalid value for field 'resource.scheduling.instanceTerminationAction': '%s'.", a))
	}
	return nil
}
