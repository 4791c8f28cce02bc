package agent

import (
	"context"
	"fmt"

	"github.com/schooner-ml/schooner/checkpoint"
)

// hello binds the connection to a rank and opens the rank's engine.
func (c *conn) hello(req Request) (Response, error) {
	if req.Rank == nil {
		return Response{}, badRequest("hello needs a rank")
	}
	if c.rank != nil && c.rank.rank != *req.Rank {
		return Response{}, badRequest("connection already speaks for rank %d", c.rank.rank)
	}
	plan := checkpoint.PlanInfo{World: req.World}
	if req.Plan != nil {
		plan = *req.Plan
	}
	if plan.World == 0 {
		plan.World = max(req.World, 1)
	}
	if err := plan.Validate(); err != nil {
		return Response{}, badRequest("hello: %v", err)
	}
	if *req.Rank >= plan.World {
		return Response{}, badRequest("rank %d is outside a world of %d", *req.Rank, plan.World)
	}
	r := c.rank
	if r == nil {
		var err error
		if r, err = c.a.rankFor(*req.Rank, plan); err != nil {
			return Response{}, err
		}
		c.rank = r
	} else if err := c.a.replan(r, plan); err != nil {
		return Response{}, err
	}
	c.log = c.a.log.With().Int("rank", r.rank).Logger()
	latest := r.latestStep()
	return Response{ShmDir: c.a.opts.ShmDir, Mode: c.a.opts.Mode, Latest: &latest}, nil
}

// reserve grows the rank's slots for shards of req.Bytes; a disk too small says so (the slots
// grown before it keep their space, which the saves would have needed anyway).
func (c *conn) reserve(req Request) (Response, error) {
	r := c.rank
	if r == nil {
		return Response{}, badRequest("reserve before hello")
	}
	if req.Bytes <= 0 {
		return Response{}, badRequest("reserve of %d bytes: give the shard's size", req.Bytes)
	}
	if r.eng == nil {
		return Response{}, nil
	}
	n, err := r.eng.Reserve(req.Bytes)
	if err != nil {
		return Response{}, fmt.Errorf("reserving slots of rank %d: %w", r.rank, err)
	}
	return Response{Slots: n}, nil
}

// save hands the shard the client laid out in its shared-memory buffer to the rank's engine
// (or, in remote mode, encodes it for upload). It replies once the bytes are copied out of the
// buffer, so the client may overwrite it with the next step.
func (c *conn) save(req Request) (Response, error) {
	r := c.rank
	if r == nil {
		return Response{}, badRequest("save before hello")
	}
	if req.Step < 0 {
		return Response{}, badRequest("save of negative step %d", req.Step)
	}
	shard, err := c.shardFrom(req)
	if err != nil {
		return Response{}, err
	}
	emergency := c.a.markSave(r, req.Step, req.Emergency)
	args := saveArgs{Step: req.Step, Shard: shard, Plan: r.currentPlan(), Extra: req.Extra, Emergency: emergency,
		Check: c.buf.check}
	if r.eng == nil {
		err = c.a.saveRemote(c.ctx, r, args)
	} else {
		err = c.a.saveLocal(c.ctx, r, args)
	}
	if err != nil {
		return Response{}, err
	}
	return Response{Step: req.Step, Emergency: emergency}, nil
}

// shardFrom maps the client's buffer (reusing the mapping while the client reuses the file) and
// builds a shard whose tensors point into it.
func (c *conn) shardFrom(req Request) (checkpoint.Shard, error) {
	if err := checkShmPath(c.a.opts.ShmDir, req.Shm); err != nil {
		return checkpoint.Shard{}, badRequest("save: %v", err)
	}
	if !c.buf.current(req.Shm) {
		if err := c.buf.close(); err != nil {
			c.log.Warn().Err(err).Msg("unmapping old save buffer")
		}
		c.buf = nil
		b, err := openSaveBuffer(req.Shm, c.uid)
		if err != nil {
			return checkpoint.Shard{}, badRequest("save: %v", err)
		}
		c.buf = b
		c.saveFiles[req.Shm] = true
	}
	shard := checkpoint.Shard{Rank: c.rank.rank, Tensors: make([]checkpoint.Tensor, 0, len(req.Tensors))}
	for _, t := range req.Tensors {
		if t.Offset < 0 || t.Length < 0 || t.Offset+t.Length > c.buf.size() {
			return checkpoint.Shard{}, badRequest("tensor %s [%d,+%d) lies outside the %d bytes of %s", t.Name, t.Offset, t.Length, c.buf.size(), req.Shm)
		}
		shard.Tensors = append(shard.Tensors, checkpoint.Tensor{
			Name: t.Name, Layer: t.Layer, DType: t.DType, Shape: t.Shape,
			Data: c.buf.data()[t.Offset : t.Offset+t.Length : t.Offset+t.Length],
		})
	}
	if err := shard.Validate(); err != nil {
		return checkpoint.Shard{}, badRequest("save: %v", err)
	}
	return shard, nil
}

// saveLocal gives the shard to the rank's engine, which copies it into its staging (blocking
// while the staging is full) and persists it in the background.
func (a *Agent) saveLocal(ctx context.Context, r *rankState, args saveArgs) error {
	p, err := r.eng.Save(ctx, args)
	if err != nil {
		return fmt.Errorf("saving step %d of rank %d: %w", args.Step, r.rank, err)
	}
	r.mu.Lock()
	for step, old := range r.saving {
		if isDone(old) && step < args.Step-int64(a.opts.MaxInFlight)*4 {
			delete(r.saving, step) // nobody waited for it; the engine logged any failure
		}
	}
	r.saving[args.Step] = p
	r.mu.Unlock()
	return nil
}

// saveRemote encodes the shard in memory and queues it for upload; at most MaxInFlight shards
// of a rank wait in memory, the next save blocks until the uploader is done with one
// (uploaded, superseded by a newer step, or given up).
func (a *Agent) saveRemote(ctx context.Context, r *rankState, args saveArgs) error {
	for r.queuedCount() >= a.opts.MaxInFlight {
		changed := a.changes()
		if r.queuedCount() < a.opts.MaxInFlight {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for upload room for step %d of rank %d: %w", args.Step, r.rank, ctx.Err())
		}
	}
	meta, data, err := a.w.encode(args.Step, args.Shard, args.Plan, args.Extra, a.opts.ChunkSize)
	if err == nil && args.Check != nil {
		err = args.Check()
	}
	if err != nil {
		return fmt.Errorf("encoding step %d of rank %d: %w", args.Step, r.rank, err)
	}
	meta.Emergency = args.Emergency
	a.offer(r, memSource{r: r, meta: meta, data: data})
	return nil
}

func isDone(p pending) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}
