package checkpoint

import "fmt"

// chunkJob is one staged chunk waiting for a writer.
type chunkJob struct {
	ck  *inflight
	idx int
	buf []byte // staging buffer; returned to the pool after the write
	n   int64  // data bytes in buf
}

// writer persists chunks until Close closes the queue. Chunks of several checkpoints interleave
// in the queue; each is written with one positional write at its own offset, so writers never
// coordinate with each other.
func (e *Engine) writer() {
	defer e.writers.Done()
	for j := range e.jobs {
		e.writeChunk(j)
	}
}

// writeChunk writes one staged chunk, then hands its buffer back to the pool.
func (e *Engine) writeChunk(j chunkJob) {
	defer j.ck.chunks.Done()
	defer e.staging.put(j.buf)
	<-j.ck.ready
	if j.ck.failed() != nil {
		return
	}
	if h := e.hooks.beforeChunkWrite; h != nil {
		h(j.ck.seq, j.idx)
	}
	c := j.ck.meta.Chunks[j.idx]
	w := j.buf[:j.n]
	if j.ck.slot.direct {
		// O_DIRECT needs whole blocks: pad the tail chunk with zeros (the slot has room, its
		// capacity is block aligned).
		p := alignUp(j.n)
		clear(j.buf[j.n:p])
		w = j.buf[:p]
	}
	if _, err := j.ck.slot.data.WriteAt(w, c.Offset); err != nil {
		j.ck.fail(fmt.Errorf("writing chunk %d of step %d to slot %d: %w", j.idx, j.ck.meta.Step, j.ck.slot.idx, err))
	}
}
