package pq

import (
	"cmp"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
)

// Slot states. A client claims a free slot with a CAS, fills it, posts it; a server runs the
// operation and marks it done; the client reads the answer and frees the slot. The atomic
// state word orders the plain fields around it (Go's memory model: a store observed by a
// load happens before it), so the key and value need no atomics of their own.
const (
	slotFree uint32 = iota
	slotClaimed
	slotPosted
	slotRunning
	slotDone
)

const (
	opInsert uint8 = iota
	opDeleteMin
)

// slot is one request cache line. The leading pad keeps this slot's state word off the lines
// holding the neighbouring slot's fields, whatever the sizes of K and V.
type slot[K cmp.Ordered, V any] struct {
	_     [2 * cacheLine]byte
	state atomic.Uint32
	op    uint8
	ok    bool
	key   K
	val   V
}

// server is one delegation server: a goroutine locked to its OS thread (optionally pinned
// to a CPU) that owns a contiguous group of slots, as a Nuddle server owns a client group.
type server[K cmp.Ordered, V any] struct {
	slots    []slot[K, V]
	batch    []*slot[K, V] // the server's scratch: requests taken in one sweep
	sleeping atomic.Bool
	wake     chan struct{} // capacity 1; used only to rouse a parked server, never per operation
	cpu      int           // -1: not pinned
}

// delegation is the set of servers. Servers execute on the same multiQueue that direct
// callers use, so the two modes can overlap during a switch without any coordination.
type delegation[K cmp.Ordered, V any] struct {
	backbone   *multiQueue[K, V]
	servers    []*server[K, V]
	spin       int // client polls before yielding
	serverSpin int // idle sweeps before a server parks
	stopped    atomic.Bool
	stop       chan struct{}
	wg         sync.WaitGroup
}

func newDelegation[K cmp.Ordered, V any](mq *multiQueue[K, V], o Options) *delegation[K, V] {
	d := &delegation[K, V]{backbone: mq, spin: o.Spin, serverSpin: o.ServerSpin, stop: make(chan struct{})}
	cpus := allowedCPUs()
	for i := 0; i < o.Servers; i++ {
		s := &server[K, V]{slots: make([]slot[K, V], o.SlotsPerServer), wake: make(chan struct{}, 1), cpu: -1}
		if o.pinned() && len(cpus) > 0 {
			// The last CPUs of the allowed set: the first ones are where the runtime tends
			// to start its own threads.
			s.cpu = cpus[len(cpus)-1-i%len(cpus)]
		}
		d.servers = append(d.servers, s)
	}
	for _, s := range d.servers {
		d.wg.Add(1)
		go d.serve(s)
	}
	return d
}

// close stops the servers. A request posted too late for the servers' last sweep is taken
// back by its client, which runs it itself (see post).
func (d *delegation[K, V]) close() {
	d.stopped.Store(true)
	close(d.stop)
	d.wg.Wait()
}

// serve is a server's loop: sweep the group's slots, run what is posted; spin a while, then
// park when there is nothing to do, so an idle delegation mode costs no CPU.
func (d *delegation[K, V]) serve(s *server[K, V]) {
	defer d.wg.Done()
	// Never unlocked: when this goroutine exits, its thread exits with it and the CPU
	// affinity set below dies with the thread instead of leaking to other goroutines.
	runtime.LockOSThread()
	if s.cpu >= 0 {
		pin(s.cpu) // best effort: a refused affinity leaves a working, unpinned server
	}
	idle := 0
	for {
		if d.sweep(s) {
			idle = 0
			continue
		}
		// No runtime.Gosched here: on a goroutine locked to its thread it hands the P away
		// and puts the thread to sleep on a futex, which costs as much as parking.
		if idle++; idle < d.serverSpin {
			continue
		}
		// Park. Announce first, then look once more: a client posts, then reads sleeping,
		// so with sequentially consistent atomics one of the two sides sees the other.
		s.sleeping.Store(true)
		if d.sweep(s) {
			s.sleeping.Store(false)
			idle = 0
			continue
		}
		select {
		case <-s.wake:
			idle = 0
		case <-d.stop:
			s.sleeping.Store(false)
			d.sweep(s) // posts that raced with close still get an answer
			return
		}
	}
}

// sweep takes every posted request of the group and runs them as one batch; true if it
// ran any.
func (d *delegation[K, V]) sweep(s *server[K, V]) bool {
	b := s.batch[:0]
	for i := range s.slots {
		r := &s.slots[i]
		if r.state.Load() == slotPosted && r.state.CompareAndSwap(slotPosted, slotRunning) {
			b = append(b, r)
		}
	}
	if len(b) == 0 {
		return false
	}
	d.run(b)
	for _, r := range b {
		r.state.Store(slotDone)
	}
	s.batch = b[:0]
	return true
}

// run executes a batch, combining where that keeps the semantics: all the batch's inserts go
// to one shard under one lock acquisition (any shard is as good for an insert), and on a
// one-shard queue the deleteMins share one acquisition too, with the heap hot in this
// server's cache: the flat-combining effect that makes delegation pay under contention.
// Every request in the batch is concurrent with the others, so any order among them is a
// valid linearization.
func (d *delegation[K, V]) run(b []*slot[K, V]) {
	m := d.backbone
	var sh *shard[K, V]
	for _, r := range b {
		if r.op != opInsert {
			continue
		}
		if sh == nil {
			sh = m.lockAny(rand.Uint64())
		}
		sh.push(m.entry(r.key, r.val))
	}
	if len(m.shards) == 1 {
		if sh == nil {
			sh = &m.shards[0]
			sh.mu.Lock()
		}
		for _, r := range b {
			if r.op == opDeleteMin {
				var e entry[K, V] // zero key and value when empty
				if r.ok = sh.h.len() > 0; r.ok {
					e = sh.h.pop()
				}
				r.key, r.val = e.key, e.val
			}
		}
	}
	if sh != nil {
		sh.publish()
		sh.mu.Unlock()
	}
	if len(m.shards) == 1 {
		return
	}
	for _, r := range b {
		if r.op == opDeleteMin {
			r.key, r.val, r.ok = m.deleteMin(rand.Uint64())
		}
	}
}
