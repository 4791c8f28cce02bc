package pq

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// BenchmarkMixed is a 50/50 Insert/DeleteMin mix over 1K items from GOMAXPROCS goroutines,
// per mode, on the default backbone and on a strict one-shard queue: the quick way to see the
// adaptive queue's counting overhead over Direct, and delegation's batching on one lock. The
// grid, the baseline and the switch timings are in bench/pq. The adaptive queue is timed
// once its controller has closed two windows (see warmUp), here and in the benchmarks below.
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
			op := func() {
				if rand.Uint64()&1 == 0 {
					q.Insert(rand.Int64N(1<<20), 0)
				} else {
					q.DeleteMin()
				}
			}
			if c.mode == Adaptive {
				warmUp(q, func() bool { return q.Stats().Windows < 2 }, runtime.GOMAXPROCS(0), op)
			}
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					op()
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
			if c.mode == Adaptive {
				warmUp(q, func() bool { return q.Stats().Windows < 2 }, runtime.GOMAXPROCS(0), func() { q.DeleteMin() })
			}
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					q.DeleteMin()
				}
			})
		})
	}
}

// BenchmarkEmptyDeleteMinThreads is BenchmarkEmptyDeleteMin at a fixed number of goroutines (1
// and 2 here; the grid goes to 16 in bench/pq) with each goroutine's loop state on its own
// stack: RunParallel's testing.PB is a 32-byte heap object whose cache field every Next
// writes, two to a cache line, so on an operation of a few nanoseconds the benchmark's own
// false sharing can decide the number. Reported ns/op is wall time over all operations, as
// RunParallel's is.
func BenchmarkEmptyDeleteMinThreads(b *testing.B) {
	for _, threads := range []int{1, 2} {
		for _, c := range []struct {
			name string
			mode Mode
		}{{"direct", Direct}, {"adaptive", Adaptive}} {
			b.Run(fmt.Sprintf("%s/threads=%d", c.name, threads), func(b *testing.B) {
				q := New[int64, int64](Options{Mode: c.mode})
				defer q.Close()
				if c.mode == Adaptive {
					warmUp(q, func() bool { return q.Stats().Windows < 2 }, threads, func() { q.DeleteMin() })
				}
				parallel(b, threads, func() { q.DeleteMin() })
			})
		}
	}
}

// warmUp runs op from threads goroutines on an adaptive queue while more says so (until its
// controller has closed two windows under the load): the first window samples at the
// highest rate, one operation in 128, and the controller lowers the rate only from the
// second on, so a benchmark shorter than two windows (200 ms by default) would measure the
// start-up rate rather than the steady one.
func warmUp(q *Queue[int64, int64], more func() bool, threads int, op func()) {
	for more() {
		var wg sync.WaitGroup
		for range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 1 << 14 {
					op()
				}
			}()
		}
		wg.Wait()
	}
}

// parallel runs op b.N times in all, split over threads goroutines that each count their
// share down in a local variable: nothing written per operation is shared but what op writes.
func parallel(b *testing.B, threads int, op func()) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range threads {
		n := b.N / threads
		if w < b.N%threads {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range n {
				op()
			}
		}()
	}
	b.ResetTimer()
	close(start)
	wg.Wait()
}

// BenchmarkEmptyDeleteMinPaired measures forced direct and adaptive together: b.N chunks of
// 64K empty-queue DeleteMins per goroutine, alternating between the two queues from chunk to
// chunk, and reports each one's ns/op and their ratio (adaptive-ns/op, direct-ns/op,
// adaptive/direct). On a shared machine the load drifts between the sub-benchmarks of
// BenchmarkEmptyDeleteMinThreads, which run a second or more apart; here both see the same
// drift to within a millisecond or so. Timing starts once the adaptive queue's controller has
// closed two windows under the load (see warmUp). The adaptive queue idles while direct runs,
// so its controller sees half the rate and samples at up to twice the steady rate: if
// anything, this overstates its cost.
func BenchmarkEmptyDeleteMinPaired(b *testing.B) {
	paired(b, 0, func(q *Queue[int64, int64]) { q.DeleteMin() })
}

// BenchmarkMixedPaired is a 50/50 mix over 1K items, paired as BenchmarkEmptyDeleteMinPaired
// is. Each goroutine alternates an Insert of a random key with a DeleteMin, so that both
// queues stay at 1K items: with BenchmarkMixed's coin flips their sizes would walk apart, and
// with them the cost of an operation.
func BenchmarkMixedPaired(b *testing.B) {
	paired(b, 1024, func(q *Queue[int64, int64]) {
		q.Insert(rand.Int64N(1<<20), 0)
		q.DeleteMin()
	})
}

// paired runs op on a forced-direct and an adaptive queue, each prefilled with size items,
// in alternating chunks, at 1 and 2 goroutines (see BenchmarkEmptyDeleteMinPaired).
func paired(b *testing.B, size int64, op func(*Queue[int64, int64])) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			qs := []*Queue[int64, int64]{New[int64, int64](Options{Mode: Direct}), New[int64, int64](Options{Mode: Adaptive})}
			for _, q := range qs {
				defer q.Close()
				for i := range size {
					q.Insert(i, i)
				}
			}
			const chunk = 1 << 16
			run := func(q *Queue[int64, int64]) time.Duration {
				t0 := time.Now()
				var wg sync.WaitGroup
				for range threads {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range chunk {
							op(q)
						}
					}()
				}
				wg.Wait()
				return time.Since(t0)
			}
			for qs[1].Stats().Windows < 2 { // see warmUp
				run(qs[0])
				run(qs[1])
			}
			b.ResetTimer()
			var spent [2]time.Duration
			for i := range 2 * b.N {
				spent[i%2] += run(qs[i%2])
			}
			ops := float64(b.N) * chunk * float64(threads) // op calls: an Insert and a DeleteMin each in BenchmarkMixedPaired
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(spent[0])/ops, "direct-ns/op")
			b.ReportMetric(float64(spent[1])/ops, "adaptive-ns/op")
			b.ReportMetric(float64(spent[1])/float64(spent[0]), "adaptive/direct")
		})
	}
}
