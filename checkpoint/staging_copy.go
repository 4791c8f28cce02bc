package checkpoint

import (
	"context"
	"fmt"
	"hash/crc32"
	"runtime/debug"
	"sync"
)

// maxCopiers bounds the goroutines one Save uses to copy chunks into staging: copying is
// memory-bandwidth bound and a few cores saturate it.
const maxCopiers = 4

// copyBlock is how much is copied before it is checksummed: small enough that the checksum
// reads the bytes from the CPU cache the copy just wrote them to, instead of from memory again.
const copyBlock = 256 << 10

// stageTask is one chunk to copy into its staging buffer.
type stageTask struct {
	idx    int
	buf    []byte
	pieces [][]byte // tensor data, in order, exactly filling the chunk
}

// stage copies the shard's bytes into staging buffers, chunk by chunk, checksumming each chunk
// as it is copied, and queues every staged chunk for the writers. Buffers are taken in chunk
// order by the calling goroutine (that is where back-pressure blocks); the copying itself is
// spread over e.copiers goroutines. It returns once every byte is staged.
func (e *Engine) stage(ctx context.Context, ck *inflight, shard Shard) error {
	if ck.slot == nil {
		return fmt.Errorf("no slot available in %s", e.opts.Dir)
	}
	n := min(e.copiers, len(ck.meta.Chunks))
	if n == 0 {
		return nil
	}
	tasks := make(chan stageTask)
	var wg sync.WaitGroup
	var faultOnce sync.Once
	var fault error
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range tasks {
				if err := e.copyChunk(ck, t); err != nil {
					faultOnce.Do(func() { fault = err })
				}
			}
		}()
	}
	err := e.dispatch(ctx, ck, shard, tasks)
	close(tasks)
	wg.Wait()
	if err == nil {
		err = fault
	}
	return err
}

// dispatch cuts the tensors into chunk-sized lists of pieces and hands each chunk, with a
// staging buffer, to the copiers.
func (e *Engine) dispatch(ctx context.Context, ck *inflight, shard Shard, tasks chan<- stageTask) error {
	ti, off := 0, int64(0) // cursor: shard.Tensors[ti].Data[off:]
	for idx, c := range ck.meta.Chunks {
		buf, err := e.staging.get(ctx)
		if err != nil {
			return err
		}
		var pieces [][]byte
		for need := c.Length; need > 0; {
			d := shard.Tensors[ti].Data[off:]
			if len(d) == 0 {
				ti, off = ti+1, 0
				continue
			}
			take := min(int64(len(d)), need)
			pieces = append(pieces, d[:take])
			off += take
			need -= take
		}
		ck.chunks.Add(1) // done by the writer
		tasks <- stageTask{idx: idx, buf: buf, pieces: pieces}
	}
	return nil
}

// copyChunk copies one chunk into its buffer block by block, checksumming each block while it
// is still in cache, and queues the chunk for the writers. If reading the caller's memory
// faults, the checkpoint fails and the chunk is not queued.
func (e *Engine) copyChunk(ck *inflight, t stageTask) error {
	crc, at, err := copyPieces(t.buf, t.pieces)
	if err != nil {
		err = fmt.Errorf("copying chunk %d of step %d: %w", t.idx, ck.meta.Step, err)
		ck.fail(err)
		e.staging.put(t.buf)
		ck.chunks.Done() // the writer's share: it never sees this chunk
		return err
	}
	ck.meta.Chunks[t.idx].CRC32C = crc
	e.jobs <- chunkJob{ck: ck, idx: t.idx, buf: t.buf, n: int64(at)}
	return nil
}

// copyPieces copies pieces into dst and checksums them. The pieces may be a memory-mapped file
// of another process (the checkpoint agent's clients): one that shrinks the file under the copy
// makes the read fault, which with SetPanicOnFault is a panic of this goroutine only, returned
// here as an error wrapping ErrSourceFault instead of killing the process with SIGBUS.
func copyPieces(dst []byte, pieces [][]byte) (crc uint32, at int, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if f, ok := p.(interface{ Addr() uintptr }); ok {
			err = fmt.Errorf("%w (fault at address %#x after %d bytes of the chunk)", ErrSourceFault, f.Addr(), at)
			return
		}
		panic(p)
	}()
	for _, p := range pieces {
		for len(p) > 0 {
			n := min(len(p), copyBlock)
			d := dst[at : at+n]
			copy(d, p[:n])
			crc = crc32.Update(crc, Castagnoli, d)
			at += n
			p = p[n:]
		}
	}
	return crc, at, nil
}
