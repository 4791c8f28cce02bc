package sim

import (
	"container/heap"
	"time"
)

// action is what a scheduled item does when its time comes.
type action int

const (
	actCapacity action = iota // an offering's spot capacity changes to level
	actPrice                  // an offering's spot price takes a step
	actBoot                   // an instance finishes booting
	actPreempt                // an instance's notice runs out
)

// item is one scheduled change. Items run in time order; items due at the same instant run in
// the order they were scheduled (seq), which keeps the market deterministic.
type item struct {
	at    time.Time
	seq   uint64
	act   action
	off   *offering
	inst  *instance
	level int
}

// queue is a min-heap of items by (at, seq).
type queue struct {
	items []*item
	seq   uint64
}

func (q *queue) Len() int { return len(q.items) }
func (q *queue) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return a.seq < b.seq
}
func (q *queue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *queue) Push(x any)    { q.items = append(q.items, x.(*item)) }
func (q *queue) Pop() any {
	n := len(q.items)
	it := q.items[n-1]
	q.items[n-1] = nil
	q.items = q.items[:n-1]
	return it
}

// schedule adds it, stamping its sequence number.
func (q *queue) schedule(it *item) {
	q.seq++
	it.seq = q.seq
	heap.Push(q, it)
}

// due pops the earliest item if it is due at or before t.
func (q *queue) due(t time.Time) (*item, bool) {
	if len(q.items) == 0 || q.items[0].at.After(t) {
		return nil, false
	}
	return heap.Pop(q).(*item), true
}
