package checkpoint

import (
	"context"
	"fmt"
	"sync/atomic"
)

// stagingPool is the bounded set of chunk buffers Save copies into. Its memory is mapped once at
// Open and never grows: when every buffer is waiting to be written, Save blocks until a writer
// hands one back, which is the engine's back-pressure on a trainer that checkpoints faster than
// the disk persists.
//
// Buffers circulate first-in first-out, so the first large checkpoints touch (fault in) the
// whole pool and later ones find every page resident; a last-in first-out pool left cold
// buffers behind that a later checkpoint hit unpredictably. Pages are faulted in only where
// data is copied, so small checkpoints keep the resident size small.
type stagingPool struct {
	chunk int64
	free  chan []byte
	mem   []byte
	unmap func() error
	inUse atomic.Int64 // buffers handed out
	peak  atomic.Int64 // most buffers ever handed out at once
}

// newStagingPool maps n buffers of chunk bytes each, page aligned for O_DIRECT.
func newStagingPool(chunk int64, n int) (*stagingPool, error) {
	mem, unmap, err := alignedAlloc(int(chunk) * n)
	if err != nil {
		return nil, err
	}
	p := &stagingPool{chunk: chunk, free: make(chan []byte, n), mem: mem, unmap: unmap}
	for i := 0; i < n; i++ {
		off := int64(i) * chunk
		p.free <- mem[off : off+chunk : off+chunk]
	}
	return p, nil
}

// get takes a buffer, waiting while none is free; ctx cancels the wait.
func (p *stagingPool) get(ctx context.Context) ([]byte, error) {
	var b []byte
	select {
	case b = <-p.free:
	default:
		select {
		case b = <-p.free:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for staging memory: %w", ctx.Err())
		}
	}
	n := p.inUse.Add(1)
	for {
		old := p.peak.Load()
		if n <= old || p.peak.CompareAndSwap(old, n) {
			break
		}
	}
	return b, nil
}

// put returns a buffer to the pool.
func (p *stagingPool) put(b []byte) {
	p.inUse.Add(-1)
	p.free <- b
}

// capacity is the pool's size in bytes.
func (p *stagingPool) capacity() int64 { return p.chunk * int64(cap(p.free)) }

// release unmaps the memory; no buffer may be in use.
func (p *stagingPool) release() error {
	if p.unmap == nil {
		return nil
	}
	err := p.unmap()
	p.unmap, p.mem = nil, nil
	if err != nil {
		return fmt.Errorf("unmapping staging memory: %w", err)
	}
	return nil
}
