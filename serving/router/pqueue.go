package router

import "github.com/schooner-ml/schooner/pq"

// PQueue is a Queue over package pq's concurrent priority queue, with one shard: DeleteMin
// is strict and items of equal keys leave in insertion order, so it orders requests exactly
// as HeapQueue does. The router calls its queue under its own lock, so the queue's
// concurrency does not pay here yet (BENCHMARKS.md, Priority queue); it is here to be
// compared (`schooner serve router --queue pq`) and for a router whose dispatch leaves the
// lock.
type PQueue struct {
	q *pq.Queue[int64, any]
}

// NewPQueue is an empty PQueue in pq's adaptive mode.
func NewPQueue() Queue {
	return &PQueue{q: pq.New[int64, any](pq.Options{Shards: 1})}
}

// Push adds an item.
func (p *PQueue) Push(it Item) { p.q.Insert(it.Key, it.Value) }

// Pop removes the item with the lowest key.
func (p *PQueue) Pop() (Item, bool) {
	k, v, ok := p.q.DeleteMin()
	return Item{Key: k, Value: v}, ok
}

// Len is the number of items.
func (p *PQueue) Len() int { return p.q.Len() }

// Close stops the queue's controller and servers.
func (p *PQueue) Close() { p.q.Close() }
