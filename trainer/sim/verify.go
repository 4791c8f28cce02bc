package sim

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/schooner-ml/schooner/checkpoint"
)

// VerifyStep checks that durable step `step` in the remote store holds exactly the state an
// uninterrupted run of the simulated trainer reaches after `step` iterations: it reads every
// shard of the step, looks each layer's tensors up by name (whatever plan saved them) and
// compares their bytes with ExpectedLayer. The error names the first tensor that is missing or
// differs, so a broken restore path is found at the tensor it broke.
func VerifyStep(ctx context.Context, r *checkpoint.Remote, step int64, seed int64, modelLayers int) error {
	if modelLayers < 1 {
		return fmt.Errorf("verifying step %d: model has %d layers", step, modelLayers)
	}
	snap, err := checkpoint.LoadSnapshot(ctx, r, step, r.Logger)
	if err != nil {
		return fmt.Errorf("verifying step %d: %w", step, err)
	}
	if it, ok := shardIteration(snap); ok && it != step {
		return fmt.Errorf("verifying step %d: its shards say iteration %d", step, it)
	}
	for layer := range modelLayers {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("verifying step %d: %w", step, err)
		}
		for _, want := range ExpectedLayer(seed, layer, step) {
			got, ok := snap.Tensors[want.Name]
			switch {
			case !ok:
				return fmt.Errorf("verifying step %d: tensor %s is missing from the checkpoint", step, want.Name)
			case got.DType != want.DType || !slices.Equal(got.Shape, want.Shape) || got.Layer != want.Layer:
				return fmt.Errorf("verifying step %d: tensor %s is %s%v of layer %d, want %s%v of layer %d",
					step, want.Name, got.DType, got.Shape, got.Layer, want.DType, want.Shape, want.Layer)
			case !bytes.Equal(got.Data, want.Data):
				return fmt.Errorf("verifying step %d: tensor %s differs from an uninterrupted run (first difference at byte %d)",
					step, want.Name, firstDiff(got.Data, want.Data))
			}
		}
	}
	return nil
}

// shardIteration is the iteration the shards' extra values record, when they agree on one.
func shardIteration(snap *checkpoint.Snapshot) (int64, bool) {
	for _, m := range snap.Shards {
		if v, ok := m.Extra[ExtraIteration]; ok {
			var it int64
			if _, err := fmt.Sscan(v, &it); err == nil {
				return it, true
			}
		}
	}
	return 0, false
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
