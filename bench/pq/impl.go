package main

import (
	"container/heap"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/pq"
)

// target is what a cell measures: one queue implementation behind the three operations.
type target interface {
	Insert(k, v int64)
	DeleteMin() (int64, int64, bool)
	Len() int
	// Mode is the execution mode at the end (the baseline says "heap").
	Mode() string
	// Prefill inserts n items outside the clock, by the fastest path: a pq target runs
	// them directly, not through its servers, then returns to its policy.
	Prefill(n int, key func() int64)
	Windows() int
	Close()
}

// impls are the implementations in the order the table prints them.
var impls = []string{"heap", "direct", "delegate", "adaptive"}

// newTarget builds an implementation. window is the adaptive controller's window, shorter
// than the queue's default so that short cells still see several decisions; shards is the
// backbone's shard count (the baseline ignores it).
func newTarget(name string, shards int, window time.Duration, pin bool) target {
	o := pq.Options{Shards: shards, NoPin: !pin}
	switch name {
	case "heap":
		return &lockedHeap{}
	case "direct":
		o.Mode = pq.Direct
	case "delegate":
		o.Mode = pq.Delegate
	case "adaptive":
		o.Mode, o.Window = pq.Adaptive, window
	default:
		panic("unknown implementation " + name)
	}
	return smart{q: pq.New[int64, int64](o), policy: o.Mode}
}

type smart struct {
	q      *pq.Queue[int64, int64]
	policy pq.Mode
}

func (s smart) Prefill(n int, key func() int64) {
	s.q.Force(pq.Direct)
	for i := 0; i < n; i++ {
		s.q.Insert(key(), int64(i))
	}
	s.q.Force(s.policy)
}

func (s smart) Insert(k, v int64)               { s.q.Insert(k, v) }
func (s smart) DeleteMin() (int64, int64, bool) { return s.q.DeleteMin() }
func (s smart) Len() int                        { return s.q.Len() }
func (s smart) Mode() string                    { return s.q.Mode().String() }
func (s smart) Windows() int                    { return s.q.Stats().Windows }
func (s smart) Close()                          { s.q.Close() }

// lockedHeap is the baseline: container/heap behind one sync.Mutex, what a Go programmer
// writes first.
type lockedHeap struct {
	mu sync.Mutex
	h  pairHeap
}

func (l *lockedHeap) Insert(k, v int64) {
	l.mu.Lock()
	heap.Push(&l.h, pair{k, v})
	l.mu.Unlock()
}

func (l *lockedHeap) DeleteMin() (int64, int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.h) == 0 {
		return 0, 0, false
	}
	p := heap.Pop(&l.h).(pair)
	return p.k, p.v, true
}

func (l *lockedHeap) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.h)
}

func (l *lockedHeap) Prefill(n int, key func() int64) {
	for i := 0; i < n; i++ {
		l.Insert(key(), int64(i))
	}
}

func (l *lockedHeap) Mode() string { return "heap" }
func (l *lockedHeap) Windows() int { return 0 }
func (l *lockedHeap) Close()       {}

type pair struct{ k, v int64 }

type pairHeap []pair

func (h pairHeap) Len() int           { return len(h) }
func (h pairHeap) Less(i, j int) bool { return h[i].k < h[j].k }
func (h pairHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pairHeap) Push(x any)        { *h = append(*h, x.(pair)) }
func (h *pairHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	*h = old[:len(old)-1]
	return p
}
