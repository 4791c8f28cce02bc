package agent

import (
	"context"
	"fmt"
	"time"
)

// remoteRecheck is how often a remote wait lists the store even without a local upload: other
// machines' ranks make a step durable without this agent hearing of it.
const remoteRecheck = time.Second

// wait replies once the step is committed locally, or durable in the store.
func (c *conn) wait(req Request) (Response, error) {
	r := c.rank
	if r == nil {
		return Response{}, badRequest("wait before hello")
	}
	d := req.Durable
	switch {
	case d == "":
		d = DurableLocal
	case d != DurableLocal && d != DurableRemote:
		return Response{}, badRequest("wait: unknown durability %q (want local or remote)", d)
	}
	if c.a.opts.Mode == ModeRemote {
		d = DurableRemote
	}
	if d == DurableRemote && c.a.remote == nil {
		return Response{}, badRequest("wait for remote durability, but the agent has no store")
	}
	step := req.Step
	if r.eng != nil {
		var err error
		if step, err = c.a.waitLocal(c.ctx, r, req.Step); err != nil {
			return Response{}, err
		}
		if d == DurableLocal {
			return Response{Step: step}, nil
		}
	}
	step, err := c.a.waitRemote(c.ctx, r, req.Step)
	if err != nil {
		return Response{}, err
	}
	return Response{Step: step}, nil
}

// waitLocal waits for the rank's save of step to commit and returns the step committed: step
// itself, or a newer one when the engine let a newer step supersede it.
func (a *Agent) waitLocal(ctx context.Context, r *rankState, step int64) (int64, error) {
	r.mu.Lock()
	p := r.saving[step]
	latest := r.latestLocked()
	r.mu.Unlock()
	if p == nil {
		if latest >= step {
			return latest, nil
		}
		return 0, badRequest("rank %d has not saved step %d (newest committed: %d)", r.rank, step, latest)
	}
	m, err := p.Wait(ctx)
	r.mu.Lock()
	if r.saving[step] == p {
		delete(r.saving, step)
	}
	latest = r.latestLocked()
	r.mu.Unlock()
	if err == nil {
		return m.Step, nil
	}
	if ctx.Err() == nil && latest >= step {
		return latest, nil
	}
	return 0, fmt.Errorf("waiting for step %d of rank %d: %w", step, r.rank, err)
}

// waitRemote waits until a step at or past step is durable in the store (every rank of its
// plan uploaded) and returns the oldest such step. It fails at once for a step of r the agent
// decided not to upload.
func (a *Agent) waitRemote(ctx context.Context, r *rankState, step int64) (int64, error) {
	t := time.NewTicker(remoteRecheck)
	defer t.Stop()
	for {
		changed := a.changes()
		steps, err := a.remote.DurableSteps(ctx)
		if err != nil && ctx.Err() == nil {
			a.log.Debug().Err(err).Msg("listing durable steps")
		}
		found := int64(-1)
		for _, s := range steps { // newest first
			if s < step {
				break
			}
			found = s
		}
		if found >= 0 {
			return found, nil
		}
		if why := r.skippedWhy(step); why != "" {
			return 0, fmt.Errorf("step %d of rank %d will not be uploaded: %s", step, r.rank, why)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("waiting for step %d to be durable in %s: %w", step, a.remote, ctx.Err())
		case <-changed:
		case <-t.C:
		}
	}
}
