package router

import (
	"container/heap"
	"sync"
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

// HeapQueue is a Queue over container/heap, FIFO among equal keys.
type HeapQueue struct {
	mu  sync.Mutex
	h   itemHeap
	seq uint64
}

// NewHeapQueue is an empty HeapQueue.
func NewHeapQueue() *HeapQueue { return &HeapQueue{} }

// Push adds an item.
func (q *HeapQueue) Push(it Item) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	heap.Push(&q.h, seqItem{Item: it, seq: q.seq})
}

// Pop removes the item with the lowest key.
func (q *HeapQueue) Pop() (Item, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.h) == 0 {
		return Item{}, false
	}
	return heap.Pop(&q.h).(seqItem).Item, true
}

// Len is the number of items.
func (q *HeapQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.h)
}

type seqItem struct {
	Item
	seq uint64
}

type itemHeap []seqItem

func (h itemHeap) Len() int { return len(h) }
func (h itemHeap) Less(i, j int) bool {
	if h[i].Key != h[j].Key {
		return h[i].Key < h[j].Key
	}
	return h[i].seq < h[j].seq
}
func (h itemHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *itemHeap) Push(x any)   { *h = append(*h, x.(seqItem)) }
func (h *itemHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = seqItem{}
	*h = old[:len(old)-1]
	return it
}
