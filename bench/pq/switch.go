package main

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schooner-ml/schooner/pq"
)

// switchResult summarises forced switches under load.
type switchResult struct {
	N int
	// ToDelegate and ToDirect: flip → first operation finished in the new mode (medians).
	ToDelegate, ToDirect time.Duration
	// Drain: flip to Direct → the servers' slots all empty (median): how long the old mode
	// lingers after a switch away from delegation.
	Drain time.Duration
}

// measureSwitches loads an adaptive queue with threads goroutines (50% inserts, 1K items),
// forces the mode back and forth n times at the given interval, and reads the queue's own
// switch clock after each flip.
func measureSwitches(threads, n int, every time.Duration, pin bool) switchResult {
	q := pq.New[int64, int64](pq.Options{Mode: pq.Direct, NoPin: !pin})
	defer q.Close()
	for i := int64(0); i < 1000; i++ {
		q.Insert(i, i)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 9))
			for !stop.Load() {
				if r.IntN(2) == 0 {
					q.Insert(r.Int64N(1<<20), 0)
				} else {
					q.DeleteMin()
				}
			}
		}(w)
	}
	var toDel, toDir, drain []time.Duration
	for i := 0; i < n; i++ {
		time.Sleep(every)
		m := pq.Direct + pq.Delegate - q.Mode()
		t0 := time.Now()
		q.Force(m)
		want := q.Stats().Switches
		deadline := t0.Add(time.Second)
		for time.Now().Before(deadline) {
			st := q.Stats()
			if st.LatencyOf >= want {
				if m == pq.Delegate {
					toDel = append(toDel, st.SwitchLatency)
				} else {
					toDir = append(toDir, st.SwitchLatency)
				}
				break
			}
			runtime.Gosched()
		}
		if m == pq.Direct {
			for q.Stats().Pending > 0 && time.Now().Before(deadline) {
				runtime.Gosched()
			}
			drain = append(drain, time.Since(t0))
		}
	}
	stop.Store(true)
	wg.Wait()
	return switchResult{N: n, ToDelegate: median(toDel), ToDirect: median(toDir), Drain: median(drain)}
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)/2]
}
