package sim

import (
	"encoding/json"
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

// UsageRecord is one line of the market's usage report (Config.Usage): an instance that ran,
// written when its billing ends, as a cloud's cost-and-usage report lists a line per resource.
// Summed per job it is what CostUSD says; kept line by line it tells where a bill went (spot
// or on-demand, which zone, the machines two moves held at once), which a total cannot.
type UsageRecord struct {
	Instance     string             `json:"instance"`
	Job          string             `json:"job,omitempty"`
	Provider     string             `json:"provider"`
	Zone         string             `json:"zone"`
	InstanceType string             `json:"instance_type"`
	GPUs         int                `json:"gpus"`
	Capacity     cloud.CapacityType `json:"capacity"`
	// Running is when billing began (the boot done), Ended when it stopped, both simulated.
	Running time.Time `json:"running"`
	Ended   time.Time `json:"ended"`
	// End is how the instance ended: "terminated" (by its owner) or "preempted".
	End string `json:"end"`
	// Hours are the hours billed (the provider's minimum included) and CostUSD their price,
	// a spot instance's at the spot price in effect second by second.
	Hours   float64 `json:"hours"`
	CostUSD float64 `json:"cost_usd"`
}

// writeUsage writes inst's usage record once its billing has stopped; instances that never
// ran cost nothing and get none. A failed write is counted, not fatal: the market's books
// (CostUSD) do not depend on the report. m.mu must be held.
func (m *Market) writeUsage(inst *instance) {
	if m.cfg.Usage == nil || inst.runFrom.IsZero() {
		return
	}
	hours := m.now.Sub(inst.runFrom).Hours()
	hours = max(hours, inst.off.params.MinBilled.Hours())
	rec := UsageRecord{Instance: inst.ID, Job: inst.Tags[cloud.JobTag], Provider: inst.Provider, Zone: inst.Zone,
		InstanceType: inst.InstanceType, GPUs: inst.GPUs, Capacity: inst.Capacity, Running: inst.runFrom,
		Ended: m.now, End: string(inst.State), Hours: hours, CostUSD: inst.cost}
	line, err := json.Marshal(rec)
	if err == nil {
		_, err = m.cfg.Usage.Write(append(line, '\n'))
	}
	if err != nil {
		m.usageErrors++
	}
}

// UsageErrors is how many usage records could not be written.
func (m *Market) UsageErrors() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usageErrors
}
