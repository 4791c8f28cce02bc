package gceapi

import (
	"net/http"
	"strconv"

	"github.com/schooner-ml/schooner/cloud"
)

// metadata answers GET /vm/{instance}/computeMetadata/v1/{key} as the metadata server of
// VM {instance} would. Only the keys schooner reads are served; others are 404, which the
// metadata client reports as NotDefinedError. wait_for_change is not supported: the value
// is returned at once, which a polling watcher does not notice.
func (h *Handler) metadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Metadata-Flavor", "Google")
	if r.Header.Get("Metadata-Flavor") != "Google" {
		http.Error(w, "Missing required header: Metadata-Flavor: Google", http.StatusForbidden)
		return
	}
	name := r.PathValue("instance")
	got, err := h.b.Describe(r.Context(), []string{name})
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	var inst *cloud.Instance
	for i := range got {
		if got[i].ID == name {
			inst = &got[i]
		}
	}
	if inst == nil {
		http.Error(w, "no such instance: "+name, http.StatusNotFound)
		return
	}
	project := h.opts.Project
	if project == "" {
		project = "schooner-sim"
	}
	h.mu.Lock()
	sp := h.specOf(*inst)
	h.mu.Unlock()
	num := strconv.FormatUint(projectNumber(project), 10)
	var v string
	switch r.PathValue("key") {
	case "instance/preempted":
		// GCE turns this TRUE when the preemption starts, about 30 s before the VM stops;
		// the backend's notice is that moment.
		v = boolText(h.b.InterruptionOf(name) != nil || inst.State == cloud.StatePreempted)
	case "instance/scheduling/preemptible":
		v = boolText(sp.spot)
	case "instance/id":
		v = strconv.FormatUint(numericID("instance", name), 10)
	case "instance/name", "instance/hostname":
		v = name
	case "instance/zone":
		v = "projects/" + num + "/zones/" + inst.Zone
	case "instance/machine-type":
		v = "projects/" + num + "/machineTypes/" + sp.machineType
	case "project/project-id":
		v = project
	case "project/numeric-project-id":
		v = num
	default:
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/text")
	_, _ = w.Write([]byte(v))
}

func boolText(b bool) string {
	if b {
		return "TRUE"
	}
	return "FALSE"
}
