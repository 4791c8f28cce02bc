package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/schooner-ml/schooner/checkpoint"
)

// loadAlign aligns each tensor in a restore file, so a client can view it in place as an array
// of any element type (and vector loads stay aligned).
const loadAlign = 64

// load restores a step into a fresh shared-memory file: the tensors the request selects, with
// their index. The client removes the file once it has read it.
func (c *conn) load(req Request) (Response, error) {
	rank := -1
	if req.Rank != nil {
		rank = *req.Rank
	} else if c.rank != nil {
		rank = c.rank.rank
	}
	choose := func(snap *checkpoint.Snapshot) (selection, error) {
		plan := snap.Plan
		if req.Plan != nil {
			plan = *req.Plan
		} else if c.rank != nil {
			plan = c.rank.currentPlan()
		}
		return selectTensors(snap, req, rank, plan)
	}
	r, err := c.a.restore(c.ctx, req.Step, choose)
	if err != nil {
		return Response{}, err
	}
	c.loadFiles[r.path] = true
	c.log.Info().Int64("step", r.step).Str("from", r.from).Int("tensors", len(r.index)).Int64("bytes", r.size).Msg("restored checkpoint")
	return Response{Step: r.step, Shm: r.path, Size: r.size, Tensors: r.index, Extra: r.extra, Plan: &r.plan, Source: r.from}, nil
}

// restored is a step read into a shared-memory file, ready to hand to the client.
type restored struct {
	step  int64
	plan  checkpoint.PlanInfo // the plan the step was taken under
	from  string
	path  string
	size  int64
	index []checkpoint.TensorMeta
	extra map[string]string
}

// restore reads step (negative: the newest durable one) into a shared-memory file, with the
// tensors choose selects from its layout, from the local root, or from the remote tier when the
// local root does not have it (a replacement machine, or ranks spread over several machines).
// For the newest step, a remote step newer than the local one wins: the local disk may be one
// that came back after the job moved on elsewhere: the local step is read first and its file
// removed once the remote one is read, so for that moment both files exist. A restore that
// fails leaves no file.
func (a *Agent) restore(ctx context.Context, step int64, choose chooser) (restored, error) {
	var errs []error
	var local *restored
	if a.local != nil {
		r, err := a.restoreFrom(ctx, a.local, step, choose)
		var bad selectError
		switch {
		case err == nil && (a.remote == nil || step >= 0 || !a.remoteIsNewer(ctx, r.step)):
			return r, nil
		case err == nil:
			local = &r
		case errors.As(err, &bad):
			return restored{}, bad.err
		case ctx.Err() != nil:
			return restored{}, fmt.Errorf("restoring step %d: %w", step, ctx.Err())
		default:
			a.log.Debug().Err(err).Str("source", a.local.String()).Int64("step", step).Msg("no restorable checkpoint here")
			errs = append(errs, fmt.Errorf("%s: %w", a.local, err))
		}
	}
	if a.remote != nil {
		r, err := a.restoreFrom(ctx, a.remote, step, choose)
		var bad selectError
		switch {
		case err == nil || errors.As(err, &bad):
			if local != nil {
				_ = removeShm(local.path)
			}
			if err != nil {
				return restored{}, bad.err
			}
			return r, nil
		case local != nil:
			a.log.Warn().Err(err).Int64("local_step", local.step).Msg("the store has a newer step that does not restore; restoring the local one")
			return *local, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", a.remote, err))
	}
	if len(errs) == 0 {
		return restored{}, checkpoint.ErrNoCheckpoint
	}
	return restored{}, fmt.Errorf("restoring step %d: %w", step, errors.Join(errs...))
}

// remoteIsNewer says whether the store holds a durable step newer than step.
func (a *Agent) remoteIsNewer(ctx context.Context, step int64) bool {
	steps, err := a.remote.DurableSteps(ctx)
	return err == nil && len(steps) > 0 && steps[0] > step
}
