package main

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// rawWrite is the disk's own write bandwidth for size bytes: aligned len(block) writes with
// O_DIRECT over the file at path, then fsync. The caller writes the file once untimed first, so
// the timed runs overwrite allocated blocks as the engine's slots do, and neither side pays for
// block allocation. With streams = 1 it is one sequential stream (what a synchronous save does,
// and the baseline of the blocked-time ratio); with more, that many goroutines write
// interleaved blocks at once, which is how the engine's writers drive the device, so the
// throughput ratio is taken against the better of the two.
func rawWrite(path string, block []byte, size int64, streams int) (time.Duration, error) {
	start := time.Now()
	f, err := openDirect(path)
	if err != nil {
		return 0, fmt.Errorf("creating %s: %w", path, err)
	}
	defer f.Close()
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	bs := int64(len(block))
	for s := 0; s < streams; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				off := (next.Add(1) - 1) * bs
				if off >= size {
					return
				}
				n := min(bs, size-off)
				if _, err := f.WriteAt(block[:n], off); err != nil {
					once.Do(func() { firstErr = fmt.Errorf("writing %s at %d: %w", path, off, err) })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("syncing %s: %w", path, err)
	}
	return time.Since(start), nil
}
