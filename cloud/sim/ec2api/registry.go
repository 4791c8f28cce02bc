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
	// sweepAt is when, in the backend's time, the oldest ended instance passes the retention.
	sweepAt time.Time
}

// registryRetention is how long after it ended an instance stays in the registry, in the
// backend's time: as long as EC2 shows a terminated instance, and as long as the simulated
// market describes one (sim.DefaultRetention). Without it the registry, and every unfiltered
// DescribeInstances, would grow with every instance ever launched.
const registryRetention = time.Hour

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
			if len(r.ended) == 0 {
				r.sweepAt = ev.Time.Add(registryRetention)
			}
			r.ended[ev.Instance.ID] = ev.Time
		}
	}
	if n := len(evs); n > 0 && len(r.ended) > 0 && evs[n-1].Time.After(r.sweepAt) {
		r.forgetLocked(evs[n-1].Time.Add(-registryRetention))
	}
	return append([]string(nil), r.ids...)
}

// forgetLocked drops the instances that ended before cutoff.
func (r *registry) forgetLocked(cutoff time.Time) {
	kept := r.ids[:0]
	var oldest time.Time
	for _, id := range r.ids {
		end, ok := r.ended[id]
		switch {
		case ok && end.Before(cutoff):
			delete(r.known, id)
			delete(r.reservation, id)
			delete(r.ended, id)
			continue
		case ok && (oldest.IsZero() || end.Before(oldest)):
			oldest = end
		}
		kept = append(kept, id)
	}
	clear(r.ids[len(kept):])
	r.ids = kept
	r.sweepAt = oldest.Add(registryRetention)
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
