package main

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schooner-ml/schooner/bench/pq/dataset"
)

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
	for w := 0; w < c.Threads; w++ {
		ready.Add(1)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w)+2, uint64(c.Threads)))
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
