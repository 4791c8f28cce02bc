package cloud

import "time"

// EventKind is what happened to an instance.
type EventKind string

const (
	EventCreated    EventKind = "created"
	EventRunning    EventKind = "running"
	EventNotice     EventKind = "notice"
	EventPreempted  EventKind = "preempted"
	EventTerminated EventKind = "terminated"
)

// Event is one change of an instance, numbered in the order it happened.
type Event struct {
	Seq      int64     `json:"seq"`
	Time     time.Time `json:"time"`
	Kind     EventKind `json:"kind"`
	Instance Instance  `json:"instance"`
}

// EventSource is implemented by providers that keep a log of instance changes (the simulator
// and Fake). The simulated cloud APIs use it to answer "what was preempted" the way GCE zone
// operations do, even after the instance itself is gone.
type EventSource interface {
	// EventsSince returns the events with Seq > seq, oldest first.
	EventsSince(seq int64) []Event
}

// InterruptionSource is implemented by providers that know the interruption state of each
// instance (the simulator and Fake): what the instance metadata endpoints report on the
// machine itself.
type InterruptionSource interface {
	// InterruptionOf returns the notice or preemption of instance id, or nil.
	InterruptionOf(id string) *Interruption
}
