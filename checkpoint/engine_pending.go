package checkpoint

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Pending is a checkpoint whose bytes are staged and being persisted. Wait (or Done) tells the
// trainer when it is committed.
//
// An older checkpoint that finishes after a newer one already committed is "committed but
// superseded": its data and metadata are durable and it stays on disk as a fallback, Wait
// returns its metadata and no error, but it does not move the pointer, Latest or OnCommit.
type Pending struct {
	step       int64
	done       chan struct{}
	meta       ShardMeta
	err        error
	superseded bool
}

// Step is the training step being saved.
func (p *Pending) Step() int64 { return p.step }

// Done is closed once the checkpoint is committed or has failed.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Wait blocks until the commit record is durable (or the checkpoint failed) and returns the
// committed metadata. ctx only bounds the wait; the checkpoint carries on.
func (p *Pending) Wait(ctx context.Context) (ShardMeta, error) {
	select {
	case <-p.done:
		return p.meta, p.err
	case <-ctx.Done():
		return ShardMeta{}, fmt.Errorf("waiting for step %d to commit: %w", p.step, ctx.Err())
	}
}

// complete publishes the outcome.
func (p *Pending) complete(m ShardMeta, superseded bool, err error) {
	p.meta, p.superseded, p.err = m, superseded, err
	close(p.done)
}

// inflight is the engine's record of one checkpoint between Save and commit.
type inflight struct {
	seq        uint64
	slot       *slot
	newSlot    bool // the slot's files were just created: the directory needs a sync
	invalidate bool // the slot's metadata may still be valid and must be destroyed first
	meta       ShardMeta
	ready      chan struct{} // closed once the slot may be written
	chunks     sync.WaitGroup
	pending    *Pending
	started    time.Time
	phases     phaseTimes // for the commit log line

	mu  sync.Mutex
	err error
}

// phaseTimes are the moments, since Save began, at which a checkpoint finished each phase.
type phaseTimes struct {
	staged, written, synced, meta time.Duration
}

// fail records the first error; later chunks are skipped.
func (c *inflight) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
}

// failed is the first error recorded, if any.
func (c *inflight) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}
