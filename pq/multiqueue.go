package pq

import (
	"cmp"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// cacheLine is x86's line size. Hot structures are padded to two lines, because x86
// prefetches lines in adjacent pairs and a shard's lock must not share a pair with its
// neighbour's.
const cacheLine = 64

// shard is one sequential sub-queue with its own lock. top and n mirror the heap's minimum
// hint and length so that other goroutines can read them without the lock.
type shard[K cmp.Ordered, V any] struct {
	mu  sync.Mutex
	h   minHeap[K, V]
	seq uint64        // insertions so far, under mu
	top atomic.Uint64 // hint of the minimum; math.MaxUint64 when empty
	n   atomic.Int64
	occ occupancy // the queue's occupancy bits, shared by every shard
	idx int       // this shard's bit in occ
	_   [2*cacheLine - 8 - 24 - 8 - 8 - 8 - 24 - 8]byte
}

// publish refreshes the lock-free mirrors; the caller holds mu.
func (s *shard[K, V]) publish() {
	was, now := s.n.Load() > 0, s.h.len() > 0 // n is written only under mu: was is exact
	s.n.Store(int64(s.h.len()))
	if was != now {
		s.occ.mark(s.idx, now)
	}
	if s.h.len() == 0 {
		s.top.Store(math.MaxUint64)
	} else {
		s.top.Store(s.h.top().hint)
	}
}

// multiQueue is the backbone both modes operate on: c·p sequential heaps, each behind its
// own lock (Rihani, Sanders, Dementiev, "MultiQueues", SPAA 2015). Insert goes to a random
// heap; DeleteMin reads the published minima of two random heaps and pops from the better.
// Threads rarely meet on a lock, so it scales with cores; the price is a relaxed DeleteMin
// (see doc.go). With one shard it degenerates to a locked heap and is strict.
type multiQueue[K cmp.Ordered, V any] struct {
	shards []shard[K, V]
	hint   hintFunc[K]
	occ    occupancy // which shards hold items, for the sweep of a sparse queue
}

func newMultiQueue[K cmp.Ordered, V any](n int) *multiQueue[K, V] {
	m := &multiQueue[K, V]{shards: make([]shard[K, V], n), hint: newHint[K](), occ: newOccupancy(n)}
	for i := range m.shards {
		m.shards[i].top.Store(math.MaxUint64)
		m.shards[i].occ, m.shards[i].idx = m.occ, i
	}
	return m
}

// pick is a random shard index; math/rand/v2's top-level source is per-thread in the
// runtime, so it costs a few nanoseconds and no shared cache line.
func (m *multiQueue[K, V]) pick() int { return int(rand.Uint64N(uint64(len(m.shards)))) }

// picks are two shard indexes from one random word, one from each half by multiply-shift
// (Lemire's reduction without the rejection step: with at most thousands of shards the bias is
// below one in a million). Every operation starts from one word drawn by its caller, which
// also decides with the word's lowest bits whether the operation is sampled (counters.go):
// the generator was the largest single cost of an operation on a quiet queue.
func (m *multiQueue[K, V]) picks(r uint64) (int, int) {
	n := uint64(len(m.shards))
	return int(((r >> 32) * n) >> 32), int((uint64(uint32(r)) * n) >> 32)
}

// insert adds an entry to a random shard; r is a random word (see picks).
func (m *multiQueue[K, V]) insert(k K, v V, r uint64) {
	s := m.lockAny(r)
	s.push(m.entry(k, v))
	s.publish()
	s.mu.Unlock()
}

func (m *multiQueue[K, V]) entry(k K, v V) entry[K, V] {
	return entry[K, V]{key: k, val: v, hint: m.hint(k)}
}

// lockAny locks a random shard, skipping busy ones: for an insert any shard is as good. The
// first two tries take their shards from r, later ones draw afresh.
func (m *multiQueue[K, V]) lockAny(r uint64) *shard[K, V] {
	first, second := m.picks(r)
	for try := 0; ; try++ {
		i := first
		switch {
		case try == 1:
			i = second
		case try > 1:
			i = m.pick()
		}
		s := &m.shards[i]
		if try < 2*len(m.shards) {
			if s.mu.TryLock() {
				return s
			}
			continue
		}
		s.mu.Lock() // pathological contention: queue up rather than spin forever
		return s
	}
}

// push adds an entry, numbering it for FIFO among equal keys; the caller holds mu and
// publishes when done.
func (s *shard[K, V]) push(e entry[K, V]) {
	s.seq++
	e.seq = s.seq
	s.h.push(e)
}

// deleteMin pops from the better of two random shards. When both are empty it falls back
// to a sweep of the shards the occupancy bits mark, so a sparse queue is not missed by bad
// luck, and it reports empty only when the sweep found every shard empty. In a sparse queue
// the sweep's pick (the first non-empty shard from a random start) is no worse than two
// choices: few items, few ranks to miss. r is a random word for the first pair (see picks); retries draw afresh.
func (m *multiQueue[K, V]) deleteMin(r uint64) (K, V, bool) {
	n := len(m.shards)
	for try := 0; ; try++ {
		if try > 0 {
			r = rand.Uint64()
		}
		i, j := m.picks(r)
		ti, tj := m.shards[i].top.Load(), m.shards[j].top.Load()
		ni, nj := m.shards[i].n.Load(), m.shards[j].n.Load()
		if nj > 0 && (ni == 0 || tj < ti) {
			i, ni = j, nj
		}
		if ni == 0 {
			return m.sweep(i) // both looked empty: the queue is sparse or empty
		}
		s := &m.shards[i]
		if try < 4*n {
			if !s.mu.TryLock() {
				continue // busy: another pair is as good
			}
		} else {
			s.mu.Lock() // few shards, many callers (one shard: a strict queue): wait in line
		}
		if s.h.len() == 0 { // emptied between the read and the lock
			s.mu.Unlock()
			continue
		}
		e := s.h.pop()
		s.publish()
		s.mu.Unlock()
		return e.key, e.val, true
	}
}

// sweep visits the shards the occupancy bits say hold items, from start (a random index) on,
// taking each one's lock, and pops the first item it finds. It reports empty only when no bit
// was set when its word was read, or every shard it locked was empty by then.
func (m *multiQueue[K, V]) sweep(start int) (k K, v V, ok bool) {
	m.occ.each(start, func(i int) bool {
		s := &m.shards[i]
		s.mu.Lock()
		if s.h.len() == 0 {
			s.mu.Unlock()
			return false
		}
		e := s.h.pop()
		s.publish()
		s.mu.Unlock()
		k, v, ok = e.key, e.val, true
		return true
	})
	return k, v, ok
}

// len sums the shards' lengths: exact when quiescent, a moment-to-moment estimate otherwise.
func (m *multiQueue[K, V]) len() int {
	t := int64(0)
	for i := range m.shards {
		t += m.shards[i].n.Load()
	}
	return int(t)
}
