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
	q.sw.mu.Lock()
	defer q.sw.mu.Unlock()
	return Stats{
		Mode: Mode(q.mode.Load()), Policy: Mode(q.policy.Load()),
		Switches: q.sw.switches, SwitchLatency: q.sw.latency, LatencyOf: q.sw.latencyOf, Pending: q.pending(),
		Last: q.sw.last, LastClass: q.sw.lastClass, Windows: q.sw.windows,
	}
}

func (q *Queue[K, V]) noteWindow(f Features, c Class) {
	q.sw.mu.Lock()
	q.sw.last, q.sw.lastClass = f, c
	q.sw.windows++
	q.sw.mu.Unlock()
}

// switchClock times switches. Operations pay one atomic load of at (a read-shared line) to
// learn whether a switch awaits its first operation in the new mode.
type switchClock struct {
	at     atomic.Int64 // UnixNano of the flip not yet seen through; 0 if none
	target atomic.Int32

	mu        sync.Mutex
	switches  int
	latency   time.Duration
	latencyOf int
	last      Features
	lastClass Class
	windows   int
}

func (c *switchClock) flipped(m Mode) {
	c.mu.Lock() // held across the stores so that done attributes the latency to this switch
	c.switches++
	c.target.Store(int32(m))
	c.at.Store(time.Now().UnixNano())
	c.mu.Unlock()
}

// done is called after every operation: inlined, it costs one load while no switch is being
// timed; doneSlow attributes the first operation in the new mode.
func (c *switchClock) done(ran Mode) {
	if at := c.at.Load(); at != 0 {
		c.doneSlow(at, ran)
	}
}

func (c *switchClock) doneSlow(at int64, ran Mode) {
	if Mode(c.target.Load()) != ran {
		return
	}
	if c.at.CompareAndSwap(at, 0) {
		d := time.Duration(time.Now().UnixNano() - at)
		c.mu.Lock()
		c.latency, c.latencyOf = d, c.switches
		c.mu.Unlock()
	}
}
