package checkpoint

import (
	"context"
	"runtime"
	"sync"
)

// chunkWorkers bounds how many chunks of one shard are read and checksummed at once. One
// goroutine reading a 17 GB shard chunk by chunk is bound by its own core: the copy out of the
// page cache, the CRC and the faults on fresh memory. Reads of separate chunks touch separate
// parts of the buffer, so they need no lock.
var chunkWorkers = min(runtime.GOMAXPROCS(0), 8)

// forEachChunk calls do for every chunk of m, up to workers at a time, and returns the error of
// the first chunk in order that failed, exactly as a loop over the chunks would: chunks are
// claimed in order, and after a failure only chunks before it are still claimed, so every
// chunk ahead of the first failure has run when it returns. A cancelled ctx stops the claims.
func forEachChunk(ctx context.Context, m ShardMeta, workers int, do func(i int, c ChunkMeta) error) error {
	n := len(m.Chunks)
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
				if err := do(i, m.Chunks[i]); err != nil {
					fail(i, err)
				}
			}
		}()
	}
	wg.Wait()
	return failErr
}
