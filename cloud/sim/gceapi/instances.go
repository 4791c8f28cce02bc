package gceapi

import (
	"net/http"
	"sort"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/schooner-ml/schooner/cloud"
)

// lookup finds the VM the request's path names in the zone of c as the backend describes
// it, with its spec. A VM GCE would not show is answered with GCE's 404.
func (h *Handler) lookup(r *http.Request, c call) (cloud.Instance, *spec, error) {
	name := r.PathValue("instance")
	got, err := h.b.Describe(r.Context(), []string{name})
	if err != nil {
		return cloud.Instance{}, nil, h.syncError(c, err)
	}
	for _, inst := range got {
		if inst.ID != name || inst.Zone != c.zone {
			continue
		}
		h.mu.Lock()
		sp := h.specOf(inst)
		h.mu.Unlock()
		if sp.visible(inst) {
			return inst, sp, nil
		}
		break
	}
	return cloud.Instance{}, nil, instanceNotFound(c, name)
}

func instanceNotFound(c call, name string) *apiError {
	return apiNotFound("The resource '" + zonePath(c.project, c.zone) + "/instances/" + name + "' was not found")
}

func (h *Handler) getInstance(r *http.Request, c call) (any, error) {
	inst, sp, err := h.lookup(r, c)
	if err != nil {
		return nil, err
	}
	return render(c.project, inst, sp), nil
}

func (h *Handler) deleteInstance(r *http.Request, c call) (any, error) {
	inst, sp, err := h.lookup(r, c)
	if err != nil {
		return nil, err
	}
	if err := h.b.Terminate(r.Context(), []string{inst.ID}); err != nil {
		return nil, h.syncError(c, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	sp.deleted = true
	h.specs[inst.ID] = sp
	return h.newOperation(c.zone, "delete", inst.ID, nil).proto(c.project, true), nil
}

// listInstances lists the zone's VMs: those the backend still runs, plus spot VMs that were
// preempted and, having asked to STOP, stay TERMINATED.
func (h *Handler) listInstances(r *http.Request, c call) (any, error) {
	f, size, after, err := listParams(r)
	if err != nil {
		return nil, err
	}
	live, err := h.b.List(r.Context(), nil)
	if err != nil {
		return nil, h.syncError(c, err)
	}
	var stopped []cloud.Instance
	if names := h.stoppedCandidates(); len(names) > 0 {
		if stopped, err = h.b.Describe(r.Context(), names); err != nil {
			return nil, h.syncError(c, err)
		}
	}
	var items []*computepb.Instance
	seen := map[string]bool{}
	h.mu.Lock()
	for _, inst := range append(live, stopped...) {
		if inst.Zone != c.zone || seen[inst.ID] {
			continue
		}
		seen[inst.ID] = true
		sp := h.specOf(inst)
		if !sp.visible(inst) {
			continue
		}
		if in := render(c.project, inst, sp); f.match(instanceFields(in)) {
			items = append(items, in)
		}
	}
	h.mu.Unlock()
	sort.Slice(items, func(i, j int) bool { return items[i].GetName() < items[j].GetName() })
	page, next := paginate(items, (*computepb.Instance).GetName, size, after)
	out := &computepb.InstanceList{
		Kind:     proto.String("compute#instanceList"),
		Id:       proto.String(zonePath(c.project, c.zone) + "/instances"),
		SelfLink: proto.String(zoneLink(c.project, c.zone) + "/instances"),
		Items:    page,
	}
	if next != "" {
		out.NextPageToken = proto.String(next)
	}
	return out, nil
}

// stoppedCandidates names the spot VMs that would stay TERMINATED if preempted.
func (h *Handler) stoppedCandidates() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for name, sp := range h.specs {
		if sp.spot && sp.action == "STOP" && !sp.deleted {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
