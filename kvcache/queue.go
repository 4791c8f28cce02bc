package kvcache

import "sync"

// Item is one frame of a connection on its way from the socket to the store. The exported
// fields are what a scheduling queue may look at; the rest is the holder's.
type Item struct {
	Op      string // put, put_step, drop, drop_deployment, get, list, lend
	Request string // the request a put, drop or get names; empty for put_step and list
	Step    int    // the step of a put_step
	Bytes   int    // payload bytes

	msg     any
	payload []byte
	fatal   *HolderError // the connection ends with this error after the items before it
}

// Queue carries a connection's frames from the goroutine that reads the socket to the one
// that stores them and answers, bounding how many wait in between (so a fast writer meets
// back-pressure, not unbounded memory). The holder answers a connection's frames in the
// order it read them and clients match answers by that order, so an implementation must
// pop one connection's items in the order they were pushed; a priority queue (package pq)
// orders work across connections, not within one.
type Queue interface {
	// Push adds an item, waiting while the queue is full; false once the queue is closed.
	Push(Item) bool
	// Pop removes the next item, waiting while the queue is empty; false once it is closed
	// and drained.
	Pop() (Item, bool)
	// Len is how many items wait.
	Len() int
	// Close wakes every waiter; items already pushed can still be popped.
	Close()
}

// NewQueueFunc makes one connection's queue holding at most depth items.
type NewQueueFunc func(depth int) Queue

// FIFO is a bounded first-in first-out Queue.
type FIFO struct {
	mu       sync.Mutex
	notEmpty sync.Cond
	notFull  sync.Cond
	ring     []Item
	head, n  int
	closed   bool
}

// NewFIFO returns a FIFO holding at most depth items (at least one).
func NewFIFO(depth int) *FIFO {
	q := &FIFO{ring: make([]Item, max(depth, 1))}
	q.notEmpty.L, q.notFull.L = &q.mu, &q.mu
	return q
}

var _ Queue = (*FIFO)(nil)

// Push implements Queue.
func (q *FIFO) Push(it Item) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.n == len(q.ring) && !q.closed {
		q.notFull.Wait()
	}
	if q.closed {
		return false
	}
	q.ring[(q.head+q.n)%len(q.ring)] = it
	q.n++
	q.notEmpty.Signal()
	return true
}

// Pop implements Queue.
func (q *FIFO) Pop() (Item, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.n == 0 && !q.closed {
		q.notEmpty.Wait()
	}
	if q.n == 0 {
		return Item{}, false
	}
	it := q.ring[q.head]
	q.ring[q.head] = Item{} // let the payload go
	q.head = (q.head + 1) % len(q.ring)
	q.n--
	q.notFull.Signal()
	return it, true
}

// Len implements Queue.
func (q *FIFO) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// Close implements Queue.
func (q *FIFO) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.notEmpty.Broadcast()
	q.notFull.Broadcast()
}
