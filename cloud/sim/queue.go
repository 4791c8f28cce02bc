package sim

import (
	"time"

	"github.com/schooner-ml/schooner/internal/seqheap"
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
// the order they were scheduled, which keeps the market deterministic.
type item struct {
	at    time.Time
	act   action
	off   *offering
	inst  *instance
	level int
}

// queue is a min-heap of items by time, in scheduling order among items due at the same
// instant. Its zero value is empty.
type queue struct {
	h *seqheap.Heap[*item]
}

// schedule adds it.
func (q *queue) schedule(it *item) {
	if q.h == nil {
		q.h = seqheap.New(func(a, b *item) bool { return a.at.Before(b.at) })
	}
	q.h.Push(it)
}

// due pops the earliest item if it is due at or before t.
func (q *queue) due(t time.Time) (*item, bool) {
	if q.h == nil {
		return nil, false
	}
	if it, ok := q.h.Peek(); !ok || it.at.After(t) {
		return nil, false
	}
	return q.h.Pop()
}
