package main

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schooner-ml/schooner/bench/pq/dataset"
)

// cacheLine is x86's line size; x86 fetches lines in aligned pairs.
const cacheLine = 64

// worker is one measuring goroutine's generator, padded to two cache lines each side. Every
// operation of the cell advances it, so it must share no line with another worker's: each
// had been a rand.NewPCG, a 16-byte heap object, and goroutines started together allocate
// them next to each other (with GOMAXPROCS 16, 15 of 16 workers' generators shared a line
// with another's), which put a cache-line transfer into every operation of every
// implementation, the harness's own and not the queue's, largest where the operation is
// cheapest (DeleteMin on an empty queue) and varying from trial to trial with where the
// allocator put them.
type worker struct {
	_   [2 * cacheLine]byte
	rng rand.PCG
	_   [2 * cacheLine]byte
}

// measure runs one implementation on one cell: prefill to the cell's size, then threads
// goroutines each do insert (with probability insertPct%) or DeleteMin on random keys
// until the duration is up. Only the timed phase counts; the prefill is not measured.
func measure(t target, c dataset.Cell, d time.Duration) (ops int64, secs float64) {
	rng := rand.New(rand.NewPCG(1, uint64(c.Size)))
	t.Prefill(c.Size, func() int64 { return rng.Int64N(c.KeyRange) })
	runtime.GC() // the prefill's garbage must not be collected on the clock

	var stop atomic.Bool
	var total atomic.Int64
	var ready, wg sync.WaitGroup
	start := make(chan struct{})
	share := uint64(c.InsertPct) * (1 << 32) / 100
	workers := make([]worker, c.Threads)
	for w := 0; w < c.Threads; w++ {
		ready.Add(1)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := &workers[w].rng
			r.Seed(uint64(w)+2, uint64(c.Threads)) // the sequence rand.New(rand.NewPCG(…)) gave
			ready.Done()
			<-start
			n := int64(0)
			for !stop.Load() {
				for i := 0; i < 64; i++ { // check the clock flag once per 64 operations
					x := r.Uint64()
					if x>>32 < share {
						t.Insert(int64(x&0xffffffff)%c.KeyRange, n)
					} else {
						t.DeleteMin()
					}
				}
				n += 64
			}
			total.Add(n)
		}(w)
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	return total.Load(), time.Since(t0).Seconds()
}
