package pq

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkMixed is a 50/50 Insert/DeleteMin mix over 1K items from GOMAXPROCS goroutines,
// per mode, on the default backbone and on a strict one-shard queue: the quick way to see the
// adaptive queue's counting overhead over Direct, and delegation's batching on one lock. The
// grid, the baseline and the switch timings are in bench/pq.
func BenchmarkMixed(b *testing.B) {
	for _, c := range []struct {
		name   string
		mode   Mode
		shards int
	}{{"direct", Direct, 0}, {"adaptive", Adaptive, 0}, {"delegate", Delegate, 0},
		{"strict-direct", Direct, 1}, {"strict-delegate", Delegate, 1}} {
		b.Run(c.name, func(b *testing.B) {
			q := New[int64, int64](Options{Mode: c.mode, Shards: c.shards})
			defer q.Close()
			for i := int64(0); i < 1024; i++ {
				q.Insert(i, i)
			}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if rand.Uint64()&1 == 0 {
						q.Insert(rand.Int64N(1<<20), 0)
					} else {
						q.DeleteMin()
					}
				}
			})
		})
	}
}

// BenchmarkEmptyDeleteMin is DeleteMin on an empty queue from GOMAXPROCS goroutines, per mode:
// the cheapest operation there is (what the grid's 0%-insert cells measure once the queue has
// drained), so the one where the adaptive queue's own cost on every operation shows most.
func BenchmarkEmptyDeleteMin(b *testing.B) {
	for _, c := range []struct {
		name string
		mode Mode
	}{{"direct", Direct}, {"adaptive", Adaptive}} {
		b.Run(c.name, func(b *testing.B) {
			q := New[int64, int64](Options{Mode: c.mode})
			defer q.Close()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					q.DeleteMin()
				}
			})
		})
	}
}
