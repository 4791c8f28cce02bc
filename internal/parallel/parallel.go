// Package parallel runs the numbered parts of one piece of work on a few goroutines, for work
// one core would otherwise bind: reading and checksumming a large checkpoint's chunks, copying
// a restore into shared memory. The parts touch disjoint memory, so they need no lock.
package parallel

import (
	"context"
	"runtime"
	"sync"
)

// Workers is how many goroutines to spread such work over: the machine's cores, at most eight
// (copies and checksums are memory-bandwidth bound, and a few cores saturate it).
func Workers() int { return min(runtime.GOMAXPROCS(0), 8) }

// InOrder calls do(i) for i in [0, n), up to workers at a time, and returns the error of the
// first part in order that failed, exactly as a loop over the parts would: parts are claimed
// in order, and after a failure only parts before it are still claimed, so every part ahead
// of the first failure has run when it returns. A cancelled ctx stops the claims.
func InOrder(ctx context.Context, n, workers int, do func(i int) error) error {
	workers = max(1, min(workers, n))
	var (
		mu      sync.Mutex
		next    int
		failAt  = n
		failErr error
		wg      sync.WaitGroup
	)
	claim := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= failAt {
			return 0, false
		}
		i := next
		next++
		return i, true
	}
	fail := func(i int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if i < failAt {
			failAt, failErr = i, err
		}
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i, ok := claim()
				if !ok {
					return
				}
				if err := ctx.Err(); err != nil {
					fail(i, err)
					return
				}
				if err := do(i); err != nil {
					fail(i, err)
				}
			}
		}()
	}
	wg.Wait()
	return failErr
}
