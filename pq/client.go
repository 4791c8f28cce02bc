package pq

import (
	"math/rand/v2"
	"runtime"
)

// The client side of delegation: claim a slot, post the request, wait on the slot's flag.

// claim finds a free slot, starting at a random server and slot so that clients spread
// over the groups; nil when every slot is busy (the caller then runs the operation itself).
func (d *delegation[K, V]) claim() (*server[K, V], *slot[K, V]) {
	if d.stopped.Load() {
		return nil, nil
	}
	si := int(rand.Uint64N(uint64(len(d.servers))))
	for a := 0; a < len(d.servers); a++ {
		s := d.servers[(si+a)%len(d.servers)]
		n := len(s.slots)
		start := int(rand.Uint64N(uint64(n)))
		for b := 0; b < n; b++ {
			r := &s.slots[(start+b)%n]
			if r.state.Load() == slotFree && r.state.CompareAndSwap(slotFree, slotClaimed) {
				return s, r
			}
		}
	}
	return nil, nil
}

// post hands a filled slot to its server and waits for the answer: spin on the slot's own
// flag (a line only this client and one server touch), then yield. False if the servers
// stopped before taking the request: it is back in the client's hands, not run.
func (d *delegation[K, V]) post(s *server[K, V], r *slot[K, V]) bool {
	r.state.Store(slotPosted)
	if s.sleeping.Load() && s.sleeping.CompareAndSwap(true, false) {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	for i := 0; r.state.Load() != slotDone; i++ {
		if i >= d.spin {
			if d.stopped.Load() && r.state.CompareAndSwap(slotPosted, slotClaimed) {
				return false
			}
			runtime.Gosched()
		}
	}
	return true
}

// insert delegates an Insert; false if no slot was free.
func (d *delegation[K, V]) insert(k K, v V) bool {
	s, r := d.claim()
	if r == nil {
		return false
	}
	r.op, r.key, r.val = opInsert, k, v
	served := d.post(s, r)
	var zk K
	var zv V
	r.key, r.val = zk, zv // the slot must not keep a string key or the value alive
	r.state.Store(slotFree)
	return served
}

// deleteMin delegates a DeleteMin; served is false if no slot was free.
func (d *delegation[K, V]) deleteMin() (k K, v V, ok, served bool) {
	s, r := d.claim()
	if r == nil {
		return k, v, false, false
	}
	r.op = opDeleteMin
	if !d.post(s, r) {
		r.state.Store(slotFree)
		return k, v, false, false
	}
	k, v, ok = r.key, r.val, r.ok
	var zk K
	var zv V
	r.key, r.val = zk, zv
	r.state.Store(slotFree)
	return k, v, ok, true
}

// pending counts slots not free: requests claimed, posted or not yet collected.
func (d *delegation[K, V]) pending() int {
	n := 0
	for _, s := range d.servers {
		for i := range s.slots {
			if s.slots[i].state.Load() != slotFree {
				n++
			}
		}
	}
	return n
}
