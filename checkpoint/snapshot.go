package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/rs/zerolog"
)

// Snapshot is one step's whole state gathered from every rank's shard, indexed by tensor name.
// Because restore goes by name and layer rather than by rank, a snapshot taken under one
// pipeline/data-parallel split can be handed out under another (ForStage).
type Snapshot struct {
	Step    int64
	Plan    PlanInfo // the plan the checkpoint was taken under
	Shards  []ShardMeta
	Tensors map[string]Tensor
}

// LoadSnapshot reads every rank's shard of a step from src and merges them by name. With
// step < 0 it takes the newest durable step whose shards all verify, falling back (warn log
// naming the corrupt and the fallback step) past corrupt or vanished ones; with step >= 0 it
// loads exactly that step. Two ranks holding the same name with different contents is an error.
func LoadSnapshot(ctx context.Context, src Source, step int64, log zerolog.Logger) (*Snapshot, error) {
	var snap *Snapshot
	err := TryDurable(ctx, src, step, log, func(st int64) error {
		var err error
		snap, err = loadStep(ctx, src, st)
		return err
	})
	if err != nil {
		return nil, err
	}
	return snap, nil
}

// TryDurable runs load on step when step >= 0. With step < 0 it runs load on each durable step
// of src, newest first, until one succeeds, falling back (warn log naming the corrupt and the
// fallback step) past a step whose load fails with ErrCorrupt or ErrNoCheckpoint; any other
// error ends the search. It is how every restore picks its step, whatever it reads into.
func TryDurable(ctx context.Context, src Source, step int64, log zerolog.Logger, load func(step int64) error) error {
	if step >= 0 {
		return load(step)
	}
	steps, err := src.DurableSteps(ctx)
	if err != nil {
		return fmt.Errorf("listing durable steps in %s: %w", src, err)
	}
	var lastErr error
	for i, st := range steps {
		err := load(st)
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNoCheckpoint) {
			return err
		}
		lastErr = err
		what := "incomplete"
		if errors.Is(err, ErrCorrupt) {
			what = "corrupt"
		}
		ev := log.Warn().Err(err).Str("source", src.String()).Int64("corrupt_step", st)
		if i+1 < len(steps) {
			ev.Int64("fallback_step", steps[i+1]).Msgf("checkpoint of step %d is %s; falling back to step %d", st, what, steps[i+1])
		} else {
			ev.Msgf("checkpoint of step %d is %s and no older durable step is left", st, what)
		}
	}
	if lastErr != nil {
		return fmt.Errorf("loading from %s: %w (no durable step verified; last: %w)", src, ErrNoCheckpoint, lastErr)
	}
	return fmt.Errorf("loading from %s: %w", src, ErrNoCheckpoint)
}

// loadStep reads ranks 0..World-1 of step (World from rank 0's plan) and merges them.
func loadStep(ctx context.Context, src Source, step int64) (*Snapshot, error) {
	first, m0, err := src.ReadShard(ctx, step, 0)
	if err != nil {
		return nil, fmt.Errorf("loading step %d: %w", step, err)
	}
	snap := &Snapshot{Step: step, Plan: m0.Plan, Tensors: make(map[string]Tensor)}
	owner := make(map[string]int)
	add := func(shard Shard, m ShardMeta) error {
		snap.Shards = append(snap.Shards, m)
		for _, t := range shard.Tensors {
			prev, dup := snap.Tensors[t.Name]
			if dup && !sameTensor(prev, t) {
				return fmt.Errorf("loading step %d: tensor %s differs between rank %d and rank %d", step, t.Name, owner[t.Name], m.Rank)
			}
			if !dup {
				snap.Tensors[t.Name], owner[t.Name] = t, m.Rank
			}
		}
		return nil
	}
	if err := add(first, m0); err != nil {
		return nil, err
	}
	for rank := 1; rank < m0.Plan.World; rank++ {
		shard, m, err := src.ReadShard(ctx, step, rank)
		if err != nil {
			return nil, fmt.Errorf("loading step %d: %w", step, err)
		}
		if err := add(shard, m); err != nil {
			return nil, err
		}
	}
	return snap, nil
}

// sameTensor compares everything but the name.
func sameTensor(a, b Tensor) bool {
	return a.Layer == b.Layer && a.DType == b.DType && slices.Equal(a.Shape, b.Shape) && bytes.Equal(a.Data, b.Data)
}

// Names lists the tensor names, sorted.
func (s *Snapshot) Names() []string { return slices.Sorted(maps.Keys(s.Tensors)) }

// Layers returns the tensors of layers [first, end) plus the NoLayer ones (which every stage
// needs), sorted by name.
func (s *Snapshot) Layers(first, end int) []Tensor {
	var out []Tensor
	for _, n := range s.Names() {
		t := s.Tensors[n]
		if t.Layer == NoLayer || (t.Layer >= first && t.Layer < end) {
			out = append(out, t)
		}
	}
	return out
}

// ForStage returns what pipeline stage `stage` of plan loads: the layers plan.Stages[stage]
// holds. A plan without stages is one stage holding everything; a stage the plan does not have
// gets nil.
func (s *Snapshot) ForStage(plan PlanInfo, stage int) []Tensor {
	if len(plan.Stages) == 0 {
		if stage != 0 {
			return nil
		}
		return s.Layers(0, math.MaxInt)
	}
	if stage < 0 || stage >= len(plan.Stages) {
		return nil
	}
	return s.Layers(plan.Stages[stage].First, plan.Stages[stage].End)
}
