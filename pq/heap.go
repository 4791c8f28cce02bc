package pq

import "cmp"

// entry is one item in a sub-queue. The hint is the key's monotone uint64 image (see
// orderkey.go), kept beside the key so that publishing a sub-queue's minimum costs no
// conversion.
type entry[K cmp.Ordered, V any] struct {
	key  K
	val  V
	hint uint64
	seq  uint64 // the shard's insertion count: equal keys leave in insertion order
}

// before orders entries by key, then by insertion. cmp.Compare rather than < so that NaN
// float keys still give a total order (they sort first).
func (e *entry[K, V]) before(o *entry[K, V]) bool {
	if c := cmp.Compare(e.key, o.key); c != 0 {
		return c < 0
	}
	return e.seq < o.seq
}

// minHeap is a plain sequential binary min-heap. It is written out rather than built on
// container/heap because the interface calls and the boxing of every element through `any`
// would cost more than the locking around it; every sub-queue of the MultiQueue is one of
// these, always used under its shard's lock.
type minHeap[K cmp.Ordered, V any] struct {
	a []entry[K, V]
}

func (h *minHeap[K, V]) len() int { return len(h.a) }

// top is the minimum; the heap must not be empty.
func (h *minHeap[K, V]) top() *entry[K, V] { return &h.a[0] }

func (h *minHeap[K, V]) push(e entry[K, V]) {
	h.a = append(h.a, e)
	i := len(h.a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !e.before(&h.a[p]) {
			break
		}
		h.a[i] = h.a[p]
		i = p
	}
	h.a[i] = e
}

// pop removes and returns the minimum; the heap must not be empty.
func (h *minHeap[K, V]) pop() entry[K, V] {
	n := len(h.a) - 1
	out := h.a[0]
	last := h.a[n]
	h.a[n] = entry[K, V]{} // drop references held by V so the collector can free them
	h.a = h.a[:n]
	if n == 0 {
		return out
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h.a[c+1].before(&h.a[c]) {
			c++
		}
		if !h.a[c].before(&last) {
			break
		}
		h.a[i] = h.a[c]
		i = c
	}
	h.a[i] = last
	return out
}
