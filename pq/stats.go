package pq

import (
	"sync"
	"sync/atomic"
	"time"
)

// Stats is what the queue can tell about itself.
type Stats struct {
	Mode     Mode // now: Direct or Delegate
	Policy   Mode // Adaptive or the forced mode
	Switches int  // mode changes so far
	// SwitchLatency is, for the last completed switch, the time from the mode flip to the
	// first operation that finished in the new mode: how soon the switch took effect.
	SwitchLatency time.Duration
	// LatencyOf is the number of the switch (counting from 1) SwitchLatency belongs to.
	LatencyOf int
	// Pending is the number of delegated requests not yet collected; after a switch to
	// Direct it falls to zero as the servers drain their slots.
	Pending int
	// Last is the last window's features and the classifier's verdict on it (adaptive only).
	Last      Features
	LastClass Class
	Windows   int
}

// Stats reads the queue's state.
func (q *Queue[K, V]) Stats() Stats {
	q.stats.mu.Lock()
	defer q.stats.mu.Unlock()
	return Stats{
		Mode: Mode(q.mode.Load()), Policy: Mode(q.policy.Load()),
		Switches: q.stats.switches, SwitchLatency: q.stats.latency, LatencyOf: q.stats.latencyOf, Pending: q.pending(),
		Last: q.stats.last, LastClass: q.stats.lastClass, Windows: q.stats.windows,
	}
}

func (q *Queue[K, V]) noteWindow(f Features, c Class) {
	q.stats.mu.Lock()
	q.stats.last, q.stats.lastClass = f, c
	q.stats.windows++
	q.stats.mu.Unlock()
}

// switchClock is what operations read to time switches: every operation loads at (one
// atomic load of a line in Queue's read-mostly block) to learn whether a switch awaits its
// first operation in the new mode. It is written only by a switch and by that first
// operation.
type switchClock struct {
	at     atomic.Int64 // UnixNano of the flip not yet seen through; 0 if none
	target atomic.Int32
}

// switchStats is what Stats reports about switches and windows, written by switches, the
// controller every window and Stats' readers: kept out of Queue's read-mostly block.
type switchStats struct {
	mu        sync.Mutex
	switches  int
	latency   time.Duration
	latencyOf int
	last      Features
	lastClass Class
	windows   int
}

// switchFlipped starts timing a switch to m.
func (q *Queue[K, V]) switchFlipped(m Mode) {
	q.stats.mu.Lock() // held across the stores so that switchSeen attributes the latency to this switch
	q.stats.switches++
	q.sw.target.Store(int32(m))
	q.sw.at.Store(time.Now().UnixNano())
	q.stats.mu.Unlock()
}

// ranIn is called after every operation with the mode it ran in: one atomic load while no
// switch is being timed (small enough to inline), switchSeen when one is.
func (q *Queue[K, V]) ranIn(m Mode) {
	if at := q.sw.at.Load(); at != 0 { // a switch awaits its first operation in the new mode
		q.switchSeen(at, m)
	}
}

// switchSeen is called by an operation that found a switch being timed (at != 0); the first
// one that ran in the switch's target mode stops the clock.
func (q *Queue[K, V]) switchSeen(at int64, ran Mode) {
	if Mode(q.sw.target.Load()) != ran {
		return
	}
	if q.sw.at.CompareAndSwap(at, 0) {
		d := time.Duration(time.Now().UnixNano() - at)
		q.stats.mu.Lock()
		q.stats.latency, q.stats.latencyOf = d, q.stats.switches
		q.stats.mu.Unlock()
	}
}
