package pq

import (
	"cmp"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// Queue is a concurrent priority queue of values V ordered by keys K, lowest first, that
// switches between direct and delegated execution as the load changes. It is safe for
// concurrent use. See the package documentation for the semantics of DeleteMin.
type Queue[K cmp.Ordered, V any] struct {
	// What every operation reads, alone on its pair of cache lines: written only by a mode
	// switch (and by the first operation after one, which clears sw.at) and by the
	// controller once a window when it sets the sampling rate, never by an operation as such.
	// The pads keep the fields below, and whatever precedes the queue in memory, off these
	// lines: the controller writes the stats and the window's verdict every window, and a
	// line read by every core must not be invalidated by writes to its neighbours. Two full
	// lines each side, whatever the queue's alignment in memory: x86 fetches lines in aligned
	// pairs.
	_      [2 * cacheLine]byte
	mq     *multiQueue[K, V]
	ctr    *counters
	del    atomic.Pointer[delegation[K, V]] // nil until a delegated mode is first needed
	mode   atomic.Int32                     // Direct or Delegate: how operations run now
	sample atomic.Uint64                    // sampling mask (counters.go); noSampling while no controller runs
	sw     switchClock
	_      [2 * cacheLine]byte

	opts   Options
	policy atomic.Int32 // Adaptive, or the forced mode

	// mu orders the rare control actions (Force, the controller's switches, Close) among
	// themselves; operations never take it.
	mu      sync.Mutex
	ctlOn   bool
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup
	closing sync.Once

	stats switchStats // what Stats reports; under its own mutex
}

// New builds a queue. An adaptive queue (the default) starts in Direct mode and runs a
// controller goroutine; a queue that ever delegates runs server goroutines. Call Close to
// stop them.
func New[K cmp.Ordered, V any](o Options) *Queue[K, V] {
	o = o.withDefaults()
	q := &Queue[K, V]{opts: o, mq: newMultiQueue[K, V](o.Shards), ctr: newCounters(), stop: make(chan struct{})}
	q.mode.Store(int32(Direct))
	q.sample.Store(noSampling)
	q.Force(o.Mode)
	return q
}

// Insert adds v with priority k.
func (q *Queue[K, V]) Insert(k K, v V) {
	r := rand.Uint64() // the shard choice and the sampling decision both come from it
	var t ticket       // zero unless this operation is sampled for the controller
	if mask := q.sample.Load(); sampled(r, mask) {
		t = q.ctr.start(r, mask)
	}
	ran := Direct
	if q.mode.Load() == int32(Delegate) && q.del.Load().insert(k, v) {
		ran = Delegate
	} else {
		q.mq.insert(k, v, r)
	}
	if t.st != nil {
		q.ctr.endInsert(t, q.mq.hint(k))
	}
	q.ranIn(ran)
}

// DeleteMin removes an item with a low key (see the package documentation for how low) and
// returns it; ok is false when the queue was found empty.
func (q *Queue[K, V]) DeleteMin() (k K, v V, ok bool) {
	r := rand.Uint64() // the shard choice and the sampling decision both come from it
	var t ticket       // zero unless this operation is sampled for the controller
	if mask := q.sample.Load(); sampled(r, mask) {
		t = q.ctr.start(r, mask)
	}
	ran := Direct
	served := false
	if q.mode.Load() == int32(Delegate) {
		k, v, ok, served = q.del.Load().deleteMin()
	}
	if served {
		ran = Delegate
	} else {
		k, v, ok = q.mq.deleteMin(r)
	}
	if t.st != nil {
		q.ctr.endDelete(t)
	}
	q.ranIn(ran)
	return k, v, ok
}

// Len is the number of items: exact when no operation is running, otherwise off by at most
// the operations in flight.
func (q *Queue[K, V]) Len() int { return q.mq.len() }

// Mode is the mode operations run in now (Direct or Delegate).
func (q *Queue[K, V]) Mode() Mode { return Mode(q.mode.Load()) }

// Force sets the policy: Direct or Delegate pins the mode, Adaptive hands it back to the
// classifier. It never waits for operations in flight: both modes work on the same backbone,
// so the old mode's operations finish on their own while new ones start in the new mode.
// After Close it does nothing.
func (q *Queue[K, V]) Force(m Mode) {
	if m != Adaptive && m != Direct && m != Delegate {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if m == Adaptive && !q.ctlOn {
		q.ctlOn = true
		q.sample.Store(1<<minSampleShift - 1)
		q.wg.Add(1)
		go q.control()
	}
	q.policy.Store(int32(m))
	if m != Adaptive {
		q.switchLocked(m)
	}
}

// adapt is the controller's switch: it applies only while the policy is still Adaptive, so
// a Force that raced with the controller's decision wins.
func (q *Queue[K, V]) adapt(m Mode) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed && Mode(q.policy.Load()) == Adaptive {
		q.switchLocked(m)
	}
}

// switchLocked flips the mode word; the caller holds mu. Servers start the first time
// delegation is chosen and stay (parked when idle) so that later switches cost one store.
func (q *Queue[K, V]) switchLocked(m Mode) {
	if m == Delegate && q.del.Load() == nil {
		q.del.Store(newDelegation(q.mq, q.opts))
	}
	if Mode(q.mode.Swap(int32(m))) != m {
		q.switchFlipped(m)
	}
}

// Close stops the controller and the servers. The queue stays usable afterwards, in Direct
// mode; Close waits for no caller: a request posted to a server that has stopped is taken
// back and run by its caller.
func (q *Queue[K, V]) Close() {
	q.closing.Do(func() {
		q.mu.Lock()
		q.closed = true
		q.policy.Store(int32(Direct))
		q.mode.Store(int32(Direct))
		close(q.stop)
		q.mu.Unlock()
		q.wg.Wait() // outside mu: the controller may be waiting for it in adapt
		// Nobody reads the counters any more. After the controller has stopped: it sets the
		// mask every window.
		q.sample.Store(noSampling)
		if d := q.del.Load(); d != nil {
			d.close() // no one can start servers now: closed is set under mu
		}
	})
}

// pending is the number of delegated requests not yet collected, for tests and the bench's
// drain measurement.
func (q *Queue[K, V]) pending() int {
	if d := q.del.Load(); d != nil {
		return d.pending()
	}
	return 0
}
