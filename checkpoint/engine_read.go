package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// Read reads the committed checkpoint of step (the newest one if the step was saved twice) and
// verifies every chunk. A checksum mismatch is an error wrapping ErrCorrupt; a step with no
// committed checkpoint on disk wraps ErrNoCheckpoint.
func (e *Engine) Read(ctx context.Context, step int64) (Shard, ShardMeta, error) {
	s, err := e.pin(func(s *slot) bool { return s.m.Step == step })
	if err != nil {
		return Shard{}, ShardMeta{}, fmt.Errorf("reading step %d of rank %d: %w", step, e.opts.Rank, err)
	}
	defer e.unpin(s)
	shard, err := readShardData(ctx, s.dataPath, s.m)
	if err != nil {
		return Shard{}, ShardMeta{}, err
	}
	return shard, s.m, nil
}

// Restore returns the newest committed checkpoint whose bytes verify. A corrupt one is logged
// (warn, naming the step it falls back to) and skipped; ErrNoCheckpoint when none is intact.
func (e *Engine) Restore(ctx context.Context) (Shard, ShardMeta, error) {
	candidates := e.Committed()
	var lastErr error
	for i, m := range candidates {
		seq := m.Seq
		s, err := e.pin(func(s *slot) bool { return s.m.Seq == seq })
		if errors.Is(err, ErrClosed) {
			return Shard{}, ShardMeta{}, err
		}
		if err != nil {
			continue // reused since the listing; an older candidate follows
		}
		shard, err := readShardData(ctx, s.dataPath, s.m)
		e.unpin(s)
		if err == nil {
			return shard, m, nil
		}
		if !errors.Is(err, ErrCorrupt) {
			return Shard{}, ShardMeta{}, fmt.Errorf("restoring rank %d: %w", e.opts.Rank, err)
		}
		lastErr = err
		ev := e.log.Warn().Err(err).Int64("corrupt_step", m.Step).Uint64("corrupt_seq", m.Seq)
		if i+1 < len(candidates) {
			ev.Int64("fallback_step", candidates[i+1].Step).
				Msgf("checkpoint of step %d is corrupt; falling back to step %d", m.Step, candidates[i+1].Step)
		} else {
			ev.Msgf("checkpoint of step %d is corrupt and no older checkpoint is left", m.Step)
		}
	}
	if lastErr != nil {
		return Shard{}, ShardMeta{}, fmt.Errorf("restoring rank %d: %w (every committed checkpoint failed to verify; last: %w)",
			e.opts.Rank, ErrNoCheckpoint, lastErr)
	}
	return Shard{}, ShardMeta{}, fmt.Errorf("restoring rank %d from %s: %w", e.opts.Rank, e.opts.Dir, ErrNoCheckpoint)
}

// ShardReader streams one committed checkpoint's data (Meta.Size bytes) while holding its slot,
// so the engine does not overwrite it — e.g. while an uploader copies it to object storage.
// Checksums are the reader's business (Meta.Chunks, Meta.CRC32C).
type ShardReader struct {
	Meta ShardMeta
	io.ReaderAt

	file   *os.File
	closed sync.Once
	unpin  func()
}

// Close releases the slot. Calling it more than once is harmless.
func (r *ShardReader) Close() error {
	var err error
	r.closed.Do(func() {
		err = r.file.Close()
		r.unpin()
	})
	return err
}

// Acquire pins the newest committed checkpoint of step and opens its data for reading.
func (e *Engine) Acquire(step int64) (*ShardReader, error) {
	s, err := e.pin(func(s *slot) bool { return s.m.Step == step })
	if err != nil {
		return nil, fmt.Errorf("acquiring step %d of rank %d: %w", step, e.opts.Rank, err)
	}
	f, err := os.Open(s.dataPath)
	if err != nil {
		e.unpin(s)
		return nil, fmt.Errorf("opening step %d data: %w", step, err)
	}
	return &ShardReader{Meta: s.m, ReaderAt: io.NewSectionReader(f, 0, s.m.Size), file: f,
		unpin: func() { e.unpin(s) }}, nil
}

// pin finds the newest committed slot matching want and pins it.
func (e *Engine) pin(want func(*slot) bool) (*slot, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	for _, s := range e.committedLocked() {
		if want(s) {
			s.pins++
			return s, nil
		}
	}
	return nil, ErrNoCheckpoint
}

// unpin releases a pin taken by pin.
func (e *Engine) unpin(s *slot) {
	e.mu.Lock()
	s.pins--
	e.mu.Unlock()
}

// Intact returns the newest committed checkpoint whose bytes verify, reading each candidate
// chunk by chunk without holding it in memory. A corrupt one is logged (warn) and skipped, so
// what a trainer is told it can resume from is what a restore would give it; ErrNoCheckpoint
// when none is intact.
func (e *Engine) Intact(ctx context.Context) (ShardMeta, error) {
	for _, m := range e.Committed() {
		seq := m.Seq
		s, err := e.pin(func(s *slot) bool { return s.m.Seq == seq })
		if errors.Is(err, ErrClosed) {
			return ShardMeta{}, err
		}
		if err != nil {
			continue // reused since the listing; an older candidate follows
		}
		err = verifyShardData(ctx, s.dataPath, s.m)
		e.unpin(s)
		if err == nil {
			return m, nil
		}
		if !errors.Is(err, ErrCorrupt) {
			return ShardMeta{}, fmt.Errorf("verifying rank %d: %w", e.opts.Rank, err)
		}
		e.log.Warn().Err(err).Int64("corrupt_step", m.Step).Uint64("corrupt_seq", m.Seq).
			Msgf("checkpoint of step %d is corrupt; it does not count as the latest", m.Step)
	}
	return ShardMeta{}, fmt.Errorf("rank %d in %s: %w", e.opts.Rank, e.opts.Dir, ErrNoCheckpoint)
}
