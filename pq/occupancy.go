package pq

import (
	"math/bits"
	"sync/atomic"
)

// occupancy is one bit per shard, set while the shard holds items: what a DeleteMin that found
// its two random shards empty reads instead of every shard's length. In a sparse queue that
// sweep was the whole cost of an operation (32 shards: 32 lines other cores keep writing, about
// 3 µs at 16 threads); the bits of 64 shards share one line. A bit changes only when its shard
// goes from empty to non-empty or back, under the shard's lock, so a queue that stays full never
// writes here at all, and a reader that holds a shard's lock sees that shard's bit as it is.
type occupancy struct {
	words []occupancyWord
}

type occupancyWord struct {
	bits atomic.Uint64
	_    [2*cacheLine - 8]byte
}

func newOccupancy(shards int) occupancy {
	return occupancy{words: make([]occupancyWord, (shards+63)/64)}
}

// mark records that shard i became non-empty (full) or empty; the caller holds its lock.
func (o occupancy) mark(i int, full bool) {
	w, bit := &o.words[i/64].bits, uint64(1)<<(i%64)
	if full {
		w.Or(bit)
	} else {
		w.And(^bit)
	}
}

// each calls try with the index of every shard whose bit is set, starting at shard start and
// wrapping around, until try returns true; it reports whether one did. Bits are read a word at
// a time, so a shard that fills behind the cursor is missed, as a sweep would miss it.
func (o occupancy) each(start int, try func(i int) bool) bool {
	n := len(o.words)
	first := start / 64
	for d := 0; d <= n; d++ {
		wi := (first + d) % n
		b := o.words[wi].bits.Load()
		switch {
		case d == 0:
			b &= ^uint64(0) << (start % 64) // the first word from start on
		case d == n:
			b &= ^(^uint64(0) << (start % 64)) // the first word again, below start
		}
		for b != 0 {
			j := bits.TrailingZeros64(b)
			b &= b - 1
			if try(wi*64 + j) {
				return true
			}
		}
	}
	return false
}
