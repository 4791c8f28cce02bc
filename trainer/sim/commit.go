package sim

import (
	"context"
	"fmt"
	"sync"

	"github.com/schooner-ml/schooner/checkpoint/agent"
	"github.com/schooner-ml/schooner/training"
)

// pendingStep is a step the saver handed to the agent and has not yet seen durable.
type pendingStep struct {
	step      int64
	emergency bool
}

// committer waits, on its own connection, for saved steps to become durable in the remote
// store and reports each one, so training never stalls on an upload.
type committer struct {
	r    *runner
	conn Agent

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	kick   chan struct{}

	mu     sync.Mutex
	queue  []pendingStep
	closed bool
}

// startCommitter dials the agent, greets it as the runner's stage and starts waiting.
func startCommitter(ctx context.Context, dial Dialer, r *runner) (*committer, error) {
	conn, err := dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("connecting the commit watcher to the checkpoint agent: %w", err)
	}
	if _, err := conn.Hello(ctx, r.a.Stage, r.a.Plan); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("greeting the checkpoint agent for the commit watcher: %w", err)
	}
	c := &committer{r: r, conn: conn, done: make(chan struct{}), kick: make(chan struct{}, 1)}
	c.ctx, c.cancel = context.WithCancel(ctx)
	go c.loop()
	return c, nil
}

// add queues a saved step; it never blocks.
func (c *committer) add(_ context.Context, p pendingStep) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.queue = append(c.queue, p)
	c.mu.Unlock()
	c.wake()
}

// drain waits until every queued step has been seen durable or given up on.
func (c *committer) drain(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.wake()
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop ends the watcher and closes its connection; safe after drain.
func (c *committer) stop() {
	c.cancel()
	<-c.done
	_ = c.conn.Close()
}

func (c *committer) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// next takes the oldest queued step; ok false with closed true means nothing more will come.
func (c *committer) next() (p pendingStep, ok, closed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		return p, false, c.closed
	}
	p = c.queue[0]
	c.queue = c.queue[1:]
	return p, true, false
}

func (c *committer) loop() {
	defer close(c.done)
	r := c.r
	for {
		p, ok, closed := c.next()
		if !ok {
			if closed {
				return
			}
			select {
			case <-c.ctx.Done():
				return
			case <-c.kick:
			}
			continue
		}
		if p.step <= r.durable.Load() {
			continue
		}
		d, err := c.conn.Wait(c.ctx, p.step, agent.DurableRemote)
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			r.log.Warn().Err(err).Int64("step", p.step).Msg("checkpoint step did not become durable")
			continue
		}
		if d <= r.durable.Load() {
			continue
		}
		r.durable.Store(d)
		r.log.Info().Int64("step", d).Bool("emergency", p.emergency && d == p.step).Msg("checkpoint durable in the remote store")
		if r.o.OnCommitted != nil {
			r.o.OnCommitted(training.CheckpointCommitted{Epoch: r.a.Epoch, Rank: r.a.Rank, Step: d, Emergency: p.emergency && d == p.step})
		}
		r.progress()
	}
}
