package ec2api

import (
	"sync"
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

// registry remembers every instance the backend ever reported, in launch order, with its
// reservation and when it ended. Provider.List leaves out terminated instances, but EC2 keeps
// showing them to DescribeInstances for a while and schooner relies on that to tell a
// preemption from a termination; the backend's event log is where they are found again.
type registry struct {
	mu    sync.Mutex
	seq   int64
	ids   []string
	known map[string]bool
	// reservation of each instance launched through RunInstances
	reservation map[string]string
	ended       map[string]time.Time
}

func newRegistry() *registry {
	return &registry{known: map[string]bool{}, reservation: map[string]string{}, ended: map[string]time.Time{}}
}

// sync reads the events since the last call and returns every instance id known so far.
func (r *registry) sync(src cloud.EventSource) []string {
	evs := src.EventsSince(r.cursor())
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range evs {
		if ev.Seq > r.seq {
			r.seq = ev.Seq
		}
		r.addLocked(ev.Instance.ID)
		if ev.Kind == cloud.EventTerminated || ev.Kind == cloud.EventPreempted {
			r.ended[ev.Instance.ID] = ev.Time
		}
	}
	return append([]string(nil), r.ids...)
}

func (r *registry) cursor() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq
}

func (r *registry) addLocked(id string) {
	if id != "" && !r.known[id] {
		r.known[id] = true
		r.ids = append(r.ids, id)
	}
}

// launched records the instances of one RunInstances reservation.
func (r *registry) launched(reservationID string, ids []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		r.addLocked(id)
		r.reservation[id] = reservationID
	}
}

// reservationOf is the reservation an instance was launched in; instances the backend made
// without this face get one of their own.
func (r *registry) reservationOf(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res, ok := r.reservation[id]; ok {
		return res
	}
	return "r-" + id
}

// endedAt is when the instance was terminated or preempted, if the event log said so.
func (r *registry) endedAt(id string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.ended[id]
	return t, ok
}
