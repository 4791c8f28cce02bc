// Package seqheap is a min-heap that keeps the order of insertion among equal keys: a
// simulation built on it replays the same way every time, and a queue built on it serves equal
// priorities first come, first served.
package seqheap

import "container/heap"

// Heap is a min-heap of T by less, first in first out among equal values. Its zero value is
// not usable: make one with New.
type Heap[T any] struct {
	h   entries[T]
	seq uint64
}

// New is an empty heap ordered by less.
func New[T any](less func(a, b T) bool) *Heap[T] {
	return &Heap[T]{h: entries[T]{less: less}}
}

// Push adds v.
func (q *Heap[T]) Push(v T) {
	q.seq++
	heap.Push(&q.h, entry[T]{v: v, seq: q.seq})
}

// Peek is the least value, without removing it; false when the heap is empty.
func (q *Heap[T]) Peek() (T, bool) {
	if len(q.h.e) == 0 {
		var zero T
		return zero, false
	}
	return q.h.e[0].v, true
}

// Pop removes the least value (the first pushed of equal ones); false when the heap is empty.
func (q *Heap[T]) Pop() (T, bool) {
	if len(q.h.e) == 0 {
		var zero T
		return zero, false
	}
	return heap.Pop(&q.h).(entry[T]).v, true
}

// Len is the number of values.
func (q *Heap[T]) Len() int { return len(q.h.e) }

type entry[T any] struct {
	v   T
	seq uint64
}

// entries is the container/heap.Interface under a Heap.
type entries[T any] struct {
	e    []entry[T]
	less func(a, b T) bool
}

func (h *entries[T]) Len() int { return len(h.e) }
func (h *entries[T]) Less(i, j int) bool {
	a, b := h.e[i], h.e[j]
	switch {
	case h.less(a.v, b.v):
		return true
	case h.less(b.v, a.v):
		return false
	}
	return a.seq < b.seq
}
func (h *entries[T]) Swap(i, j int) { h.e[i], h.e[j] = h.e[j], h.e[i] }
func (h *entries[T]) Push(x any)    { h.e = append(h.e, x.(entry[T])) }
func (h *entries[T]) Pop() any {
	n := len(h.e)
	e := h.e[n-1]
	h.e[n-1] = entry[T]{}
	h.e = h.e[:n-1]
	return e
}
