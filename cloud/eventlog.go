package cloud

import "sync"

// EventLog is a bounded, numbered log of events: what an event source that follows a
// provider's own notifications (an SQS queue, zone operations) keeps for the relay to read
// with EventsSince. Safe for concurrent use; the zero value is empty and keeps 4096 events.
type EventLog struct {
	// Keep bounds the events remembered (4096 when 0); a relay reads them within a poll.
	Keep int

	mu     sync.Mutex
	events []Event
	seq    int64
}

var _ EventSource = (*EventLog)(nil)

// Add numbers e after the last event and keeps it.
func (l *EventLog) Add(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	e.Seq = l.seq
	l.events = append(l.events, e)
	keep := l.Keep
	if keep <= 0 {
		keep = 4096
	}
	if len(l.events) > keep {
		l.events = l.events[len(l.events)-keep:]
	}
}

// EventsSince implements EventSource.
func (l *EventLog) EventsSince(seq int64) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Event
	for _, e := range l.events {
		if e.Seq > seq {
			out = append(out, e)
		}
	}
	return out
}

// LastSeq is the number of the newest event (0: none yet).
func (l *EventLog) LastSeq() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}
