package agent

import (
	"fmt"
	"math"
	"slices"

	"github.com/schooner-ml/schooner/checkpoint"
)

// selection is what a load returns: tensors and the extra values of the rank's shard.
type selection struct {
	tensors []checkpoint.Tensor
	extra   map[string]string
}

// selectTensors picks what a load asked for from a restored step: one stage of plan, a range
// of layers (tensors of no layer go with every stage and range), everything, or by default
// what rank saved, in the order it saved them. Selection by stage or layers is what lets a
// checkpoint taken under one pipeline split load under another.
func selectTensors(snap *checkpoint.Snapshot, req Request, rank int, plan checkpoint.PlanInfo) (selection, error) {
	var sel selection
	switch {
	case req.Stage != nil:
		s := *req.Stage
		if s < 0 || s >= max(len(plan.Stages), 1) {
			return sel, badRequest("load: stage %d is not in a plan of %d stages", s, len(plan.Stages))
		}
		sel.tensors = snap.ForStage(plan, s)
	case len(req.Layers) > 0:
		if len(req.Layers) != 2 || req.Layers[0] > req.Layers[1] {
			return sel, badRequest("load: layers must be [first, end), got %v", req.Layers)
		}
		sel.tensors = snap.Layers(req.Layers[0], req.Layers[1])
	case req.All:
		sel.tensors = snap.Layers(0, math.MaxInt)
	default:
		if rank < 0 {
			return sel, badRequest("load: say hello, or give a rank, stage, layers or all")
		}
		i := slices.IndexFunc(snap.Shards, func(m checkpoint.ShardMeta) bool { return m.Rank == rank })
		if i < 0 {
			return sel, fmt.Errorf("step %d has no shard of rank %d: %w", snap.Step, rank, checkpoint.ErrNoCheckpoint)
		}
		for _, tm := range snap.Shards[i].Tensors {
			t, ok := snap.Tensors[tm.Name]
			if !ok {
				return sel, fmt.Errorf("step %d: tensor %s of rank %d is missing from the restore", snap.Step, tm.Name, rank)
			}
			t.Name = tm.Name
			sel.tensors = append(sel.tensors, t)
		}
	}
	if i := slices.IndexFunc(snap.Shards, func(m checkpoint.ShardMeta) bool { return m.Rank == rank }); i >= 0 {
		sel.extra = snap.Shards[i].Extra
	}
	return sel, nil
}
