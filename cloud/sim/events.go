package sim

import (
	"github.com/schooner-ml/schooner/cloud"
)

// record appends an event about inst at now; m.mu must be held.
func (m *Market) record(kind cloud.EventKind, inst *instance) {
	m.events = append(m.events, cloud.Event{Seq: int64(len(m.events) + 1), Time: m.now, Kind: kind,
		Instance: inst.snapshot()})
}

// EventsSince returns the events with Seq > seq, oldest first: created, running, notice,
// preempted and terminated, numbered from 1 in the order they happened. The log is kept
// whole, so the simulated cloud APIs can answer "what was preempted" long after the fact.
func (m *Market) EventsSince(seq int64) []cloud.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	seq = max(seq, 0)
	if seq >= int64(len(m.events)) {
		return []cloud.Event{}
	}
	return append([]cloud.Event(nil), m.events[seq:]...)
}

// LastSeq is the Seq of the latest event, 0 before any.
func (m *Market) LastSeq() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(len(m.events))
}
