package sim

import (
	"github.com/schooner-ml/schooner/cloud"
)

// record appends an event about inst at now; m.mu must be held.
func (m *Market) record(kind cloud.EventKind, inst *instance) {
	m.events = append(m.events, cloud.Event{Seq: m.eventBase + int64(len(m.events)) + 1, Time: m.now, Kind: kind,
		Instance: inst.snapshot()})
	if kind == cloud.EventTerminated || kind == cloud.EventPreempted {
		m.ended(inst)
	}
}

// EventsSince returns the events with Seq > seq, oldest first: created, running, notice,
// preempted and terminated, numbered from 1 in the order they happened. The log keeps at
// least Config.Retention of simulated time (older events are cut in batches): a reader
// further behind gets what is left, from the oldest kept event on.
func (m *Market) EventsSince(seq int64) []cloud.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := max(seq-m.eventBase, 0)
	if i >= int64(len(m.events)) {
		return []cloud.Event{}
	}
	return append([]cloud.Event(nil), m.events[i:]...)
}

// LastSeq is the Seq of the latest event, 0 before any.
func (m *Market) LastSeq() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.eventBase + int64(len(m.events))
}
