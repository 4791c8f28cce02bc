package sim

import (
	"slices"
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

// DefaultRetention is how long, in simulated time, the market remembers an instance after it
// was terminated or preempted when Config.Retention is zero: about as long as EC2 keeps a
// terminated instance visible to DescribeInstances.
const DefaultRetention = time.Hour

// pruneBatch is how many events must have outlived the retention before the log is cut, so
// the copy that cutting costs is paid once per many events.
const pruneBatch = 256

// gone is an instance that ended, in the order they ended.
type gone struct {
	inst *instance
	at   time.Time
}

// ended notes that inst is gone as of now, so prune forgets it after the retention; m.mu must
// be held.
func (m *Market) ended(inst *instance) {
	if m.cfg.Retention < 0 {
		return
	}
	m.gone = append(m.gone, gone{inst: inst, at: m.now})
}

// prune forgets what ended more than the retention ago: gone instances (their cost is kept
// per job), their client tokens and old events. A market that runs for days of simulated time
// and thousands of instances then holds what is live plus one retention of history, not all
// of it. m.mu must be held.
func (m *Market) prune() {
	if m.cfg.Retention < 0 {
		return
	}
	cutoff := m.now.Add(-m.cfg.Retention)
	n := 0
	for n < len(m.gone) && m.gone[n].at.Before(cutoff) {
		n++
	}
	if n > 0 {
		dead := make(map[*instance]bool, n)
		for _, g := range m.gone[:n] {
			inst := g.inst
			dead[inst] = true
			cost := m.costNow(inst)
			m.prunedCost[inst.Tags[cloud.JobTag]] += cost
			m.prunedTotal += cost
			delete(m.instances, inst.ID)
			if inst.token != "" {
				delete(m.tokens, inst.token)
			}
		}
		m.gone = slices.Delete(m.gone, 0, n)
		m.order = slices.DeleteFunc(m.order, func(inst *instance) bool { return dead[inst] })
	}
	old := 0
	for old < len(m.events) && m.events[old].Time.Before(cutoff) {
		old++
	}
	if old >= pruneBatch {
		m.eventBase += int64(old)
		m.events = append([]cloud.Event(nil), m.events[old:]...)
	}
}
