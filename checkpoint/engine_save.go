package checkpoint

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// SaveRequest is one rank's checkpoint of one training step.
type SaveRequest struct {
	Step      int64
	Shard     Shard
	Plan      PlanInfo
	Extra     map[string]string
	Emergency bool // taken on a preemption notice
	// Check, when set, is called once every byte is staged, before Save returns: an error
	// discards the checkpoint and fails the save. The checkpoint agent uses it to make sure a
	// client's buffer did not change size under the copy.
	Check func() error
}

// Save stages req's bytes and returns once all of them are copied into the staging pool: the
// caller may then modify or reuse its buffers. Persisting and committing continue in the
// background; the returned Pending reports the commit. Save blocks (back-pressure) while
// MaxInFlight checkpoints are in flight or the staging pool is full; ctx cancels that wait, and
// a checkpoint abandoned halfway is discarded.
func (e *Engine) Save(ctx context.Context, req SaveRequest) (*Pending, error) {
	if err := e.checkRequest(req); err != nil {
		return nil, err
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	e.inflight.Add(1)
	e.mu.Unlock()
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		e.inflight.Done()
		return nil, fmt.Errorf("waiting for a checkpoint slot for step %d: %w", req.Step, ctx.Err())
	}
	ck := e.begin(req)
	ck.chunks.Add(1) // the staging phase itself
	go e.persist(ck)
	err := e.stage(ctx, ck, req.Shard)
	if err == nil && req.Check != nil {
		err = req.Check()
	}
	if err != nil {
		ck.fail(err)
	}
	ck.phases.staged = time.Since(ck.started)
	ck.chunks.Done()
	if err != nil {
		return nil, fmt.Errorf("staging step %d: %w", req.Step, err)
	}
	return ck.pending, nil
}

// checkRequest validates the shard and plan before anything is reserved.
func (e *Engine) checkRequest(req SaveRequest) error {
	if req.Step < 0 {
		return fmt.Errorf("saving step %d: step must not be negative", req.Step)
	}
	if req.Shard.Rank != 0 && req.Shard.Rank != e.opts.Rank {
		return fmt.Errorf("saving step %d: shard of rank %d given to the engine of rank %d", req.Step, req.Shard.Rank, e.opts.Rank)
	}
	if err := req.Plan.Validate(); err != nil {
		return fmt.Errorf("saving step %d: %w", req.Step, err)
	}
	if err := req.Shard.Validate(); err != nil {
		return fmt.Errorf("saving step %d: %w", req.Step, err)
	}
	return nil
}

// begin assigns the checkpoint its seq and a slot and lays out its metadata.
func (e *Engine) begin(req SaveRequest) *inflight {
	ck := &inflight{
		ready:   make(chan struct{}),
		pending: &Pending{step: req.Step, done: make(chan struct{})},
		started: time.Now(),
	}
	ck.meta = ShardMeta{
		Format:    FormatVersion,
		Step:      req.Step,
		Rank:      e.opts.Rank,
		Plan:      clonePlan(req.Plan),
		Created:   ck.started.UTC(),
		Emergency: req.Emergency,
		Extra:     maps.Clone(req.Extra),
	}
	var off int64
	for _, t := range req.Shard.Tensors {
		n := int64(len(t.Data))
		ck.meta.Tensors = append(ck.meta.Tensors, TensorMeta{Name: t.Name, Layer: t.Layer, DType: t.DType,
			Shape: slices.Clone(t.Shape), Offset: off, Length: n})
		off += n
	}
	ck.meta.Size = off
	for at := int64(0); at < off; at += e.opts.ChunkSize {
		ck.meta.Chunks = append(ck.meta.Chunks, ChunkMeta{Offset: at, Length: min(e.opts.ChunkSize, off-at)})
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	ck.seq = e.nextSeq
	e.nextSeq++
	ck.meta.Seq = ck.seq
	ck.slot = e.pickSlotLocked()
	if ck.slot == nil {
		ck.slot, ck.newSlot = e.addSlotLocked()
	}
	if ck.slot != nil {
		ck.slot.state = slotWriting
		ck.invalidate = ck.slot.metaValid
	}
	return ck
}

// pickSlotLocked returns a slot that may be overwritten: a free one, else the oldest committed
// slot beyond the KeepCommitted newest that nobody has pinned. nil when every slot is in use.
func (e *Engine) pickSlotLocked() *slot {
	for _, s := range e.slots {
		if s.state == slotFree && s.pins == 0 { // a free slot is pinned only while Reserve grows it
			return s
		}
	}
	committed := e.committedLocked()
	for i := len(committed) - 1; i >= e.opts.KeepCommitted; i-- {
		if committed[i].pins == 0 {
			return committed[i]
		}
	}
	return nil
}

// addSlotLocked creates one more slot when pinned slots (an upload streaming an old checkpoint)
// leave none to reuse: training must not wait for an uploader. The slot stays in the rotation.
func (e *Engine) addSlotLocked() (*slot, bool) {
	i := len(e.slots)
	s, err := openSlot(e.opts.Dir, i, e.opts.DirectIO)
	if err != nil {
		e.log.Error().Err(err).Int("slot", i).Msg("adding a checkpoint slot")
		return nil, false
	}
	e.log.Info().Int("slot", i).Msg("every reusable slot is pinned; adding a slot")
	e.slots = append(e.slots, s)
	return s, true
}

// clonePlan deep-copies a plan so the caller may reuse its slices.
func clonePlan(p PlanInfo) PlanInfo {
	p.Stages = slices.Clone(p.Stages)
	return p
}
