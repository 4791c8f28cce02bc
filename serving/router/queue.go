package router

import (
	"sync"

	"github.com/schooner-ml/schooner/internal/seqheap"
)

// Item is one waiting request in a Queue. Lower keys pop first; the router's key is the
// request's arrival time in nanoseconds, so a request pushed back (its worker was full) keeps
// its place.
type Item struct {
	Key   int64
	Value any
}

// Queue holds the requests waiting for dispatch. It is deliberately narrow so that the
// concurrent priority queue of package pq can replace the heap. The router calls it under its
// own lock, so an implementation need not be safe for concurrent use, but may be.
type Queue interface {
	Push(Item)
	// Pop removes the item with the lowest key; false when empty.
	Pop() (Item, bool)
	Len() int
}

// HeapQueue is a Queue over a heap, FIFO among equal keys.
type HeapQueue struct {
	mu sync.Mutex
	h  *seqheap.Heap[Item]
}

// NewHeapQueue is an empty HeapQueue.
func NewHeapQueue() *HeapQueue {
	return &HeapQueue{h: seqheap.New(func(a, b Item) bool { return a.Key < b.Key })}
}

// Push adds an item.
func (q *HeapQueue) Push(it Item) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.h.Push(it)
}

// Pop removes the item with the lowest key.
func (q *HeapQueue) Pop() (Item, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.h.Pop()
}

// Len is the number of items.
func (q *HeapQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.h.Len()
}
