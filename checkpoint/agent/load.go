package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/internal/parallel"
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
	snap, from, err := c.a.restore(c.ctx, req.Step)
	if err != nil {
		return Response{}, err
	}
	plan := snap.Plan
	if req.Plan != nil {
		plan = *req.Plan
	} else if c.rank != nil {
		plan = c.rank.currentPlan()
	}
	sel, err := selectTensors(snap, req, rank, plan)
	if err != nil {
		return Response{}, err
	}
	path, size, index, err := writeRestore(c.a.opts.ShmDir, sel.tensors)
	if err != nil {
		return Response{}, err
	}
	c.loadFiles[path] = true
	c.log.Info().Int64("step", snap.Step).Str("from", from).Int("tensors", len(index)).Int64("bytes", size).Msg("restored checkpoint")
	return Response{Step: snap.Step, Shm: path, Size: size, Tensors: index, Extra: sel.extra, Plan: &snap.Plan, Source: from}, nil
}

// restore loads step (negative: the newest durable one) from the local root, or from the
// remote tier when the local root does not have it (a replacement machine, or ranks spread over
// several machines). For the newest step, a remote step newer than the local one wins: the
// local disk may be one that came back after the job moved on elsewhere.
func (a *Agent) restore(ctx context.Context, step int64) (*checkpoint.Snapshot, string, error) {
	var errs []error
	var local *checkpoint.Snapshot
	if a.local != nil {
		snap, err := a.w.load(ctx, a.local, step, a.log)
		switch {
		case err == nil && (a.remote == nil || step >= 0 || !a.remoteIsNewer(ctx, snap.Step)):
			return snap, a.local.String(), nil
		case err == nil:
			local = snap
		case ctx.Err() != nil:
			return nil, "", fmt.Errorf("restoring step %d: %w", step, ctx.Err())
		default:
			a.log.Debug().Err(err).Str("source", a.local.String()).Int64("step", step).Msg("no restorable checkpoint here")
			errs = append(errs, fmt.Errorf("%s: %w", a.local, err))
		}
	}
	if a.remote != nil {
		snap, err := a.w.load(ctx, a.remote, step, a.log)
		if err == nil {
			return snap, a.remote.String(), nil
		}
		if local != nil {
			a.log.Warn().Err(err).Int64("local_step", local.Step).Msg("the store has a newer step that does not restore; restoring the local one")
			return local, a.local.String(), nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", a.remote, err))
	}
	if len(errs) == 0 {
		return nil, "", checkpoint.ErrNoCheckpoint
	}
	return nil, "", fmt.Errorf("restoring step %d: %w", step, errors.Join(errs...))
}

// remoteIsNewer says whether the store holds a durable step newer than step.
func (a *Agent) remoteIsNewer(ctx context.Context, step int64) bool {
	steps, err := a.remote.DurableSteps(ctx)
	return err == nil && len(steps) > 0 && steps[0] > step
}

// writeRestore lays the tensors out in a new shared-memory file and returns its path, size and
// index.
func writeRestore(dir string, tensors []checkpoint.Tensor) (string, int64, []checkpoint.TensorMeta, error) {
	index := make([]checkpoint.TensorMeta, len(tensors))
	var size int64
	for i, t := range tensors {
		size = alignUp(size, loadAlign)
		index[i] = checkpoint.TensorMeta{Name: t.Name, Layer: t.Layer, DType: t.DType, Shape: t.Shape, Offset: size, Length: int64(len(t.Data))}
		size += int64(len(t.Data))
	}
	m, err := createShm(dir, "load", size)
	if err != nil {
		return "", 0, nil, fmt.Errorf("writing restore: %w", err)
	}
	copyPieces(m.data, tensors, index)
	if err := m.unmap(); err != nil {
		_ = removeShm(m.path)
		return "", 0, nil, err
	}
	return m.path, size, index, nil
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

// copyPiece bounds one piece of a restore's copy into shared memory, so a few large tensors
// still spread over every worker.
const copyPiece = 64 << 20

// copyPieces copies each tensor to its offset in dst in pieces of up to copyPiece bytes, on
// parallel.Workers goroutines: the first touch of a fresh 17 GB file and the copy itself bind
// one core for tens of seconds.
func copyPieces(dst []byte, tensors []checkpoint.Tensor, index []checkpoint.TensorMeta) {
	type piece struct{ to, from []byte }
	var pieces []piece
	for i, t := range tensors {
		out := dst[index[i].Offset : index[i].Offset+int64(len(t.Data))]
		for at := 0; at < len(t.Data); at += copyPiece {
			end := min(at+copyPiece, len(t.Data))
			pieces = append(pieces, piece{out[at:end], t.Data[at:end]})
		}
	}
	// Copies cannot fail, and nothing cancels them: the context and the error are unused.
	_ = parallel.InOrder(context.Background(), len(pieces), parallel.Workers(), func(i int) error {
		copy(pieces[i].to, pieces[i].from)
		return nil
	})
}
