package checkpoint

import (
	"context"
	"fmt"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// modelTensors is an 8-layer model: two tensors per layer plus two that belong to no layer.
func modelTensors() []Tensor {
	var ts []Tensor
	for l := 0; l < 8; l++ {
		ts = append(ts,
			Tensor{Name: fmt.Sprintf("layers.%d.attn.w", l), Layer: l, DType: Float32, Shape: []int64{16, 8},
				Data: patternBytes(int64(10*l), 16*8*4)},
			Tensor{Name: fmt.Sprintf("layers.%d.mlp.w", l), Layer: l, DType: BFloat16, Shape: []int64{32},
				Data: patternBytes(int64(10*l+1), 32*2)})
	}
	return append(ts,
		Tensor{Name: "embed", Layer: NoLayer, DType: Float16, Shape: []int64{100, 4}, Data: patternBytes(1000, 800)},
		Tensor{Name: "step", Layer: NoLayer, DType: Int64, Shape: []int64{}, Data: patternBytes(1001, 8)})
}

// savePP2 saves the model as a PP=2 job: rank 0 holds layers [0,4) and the NoLayer tensors,
// rank 1 holds [4,8).
func savePP2(t *testing.T, root string, step int64) {
	plan := PlanInfo{World: 2, PP: 2, DP: 1, TP: 1, Stages: []StageLayers{{0, 4}, {4, 8}}}
	for rank := 0; rank < 2; rank++ {
		var mine []Tensor
		for _, tn := range modelTensors() {
			if (tn.Layer == NoLayer && rank == 0) || (tn.Layer >= plan.Stages[rank].First && tn.Layer < plan.Stages[rank].End) {
				mine = append(mine, tn)
			}
		}
		opts := smallOptions(RankDir(root, rank), zerolog.Nop())
		opts.Rank = rank
		e := openEngine(t, opts)
		saveWait(t, e, step, Shard{Rank: rank, Tensors: mine}, plan)
		require.NoError(t, e.Close())
	}
}

// requireSameTensors checks got against the model by name: bytes, shape, dtype, layer.
func requireSameTensors(t *testing.T, got []Tensor) {
	t.Helper()
	want := make(map[string]Tensor)
	for _, tn := range modelTensors() {
		want[tn.Name] = tn
	}
	for _, g := range got {
		w, ok := want[g.Name]
		require.True(t, ok, g.Name)
		assert.Equal(t, w.DType, g.DType, g.Name)
		assert.Equal(t, w.Shape, g.Shape, g.Name)
		assert.Equal(t, w.Layer, g.Layer, g.Name)
		assert.Equal(t, w.Data, g.Data, g.Name)
	}
}

func TestSnapshotReshardsAcrossPlans(t *testing.T) {
	root := t.TempDir()
	savePP2(t, root, 40)
	snap, err := LoadSnapshot(context.Background(), LocalRoot(root, zerolog.Nop()), -1, zerolog.Nop())
	require.NoError(t, err)
	assert.Equal(t, int64(40), snap.Step)
	assert.Len(t, snap.Names(), 18)

	pp4 := PlanInfo{World: 4, PP: 4, DP: 1, TP: 1, Stages: []StageLayers{{0, 2}, {2, 4}, {4, 6}, {6, 8}}}
	seen := make(map[string]int)
	for stage := 0; stage < 4; stage++ {
		ts := snap.ForStage(pp4, stage)
		requireSameTensors(t, ts)
		assert.Len(t, ts, 2*2+2, "stage %d: two layers of two tensors plus the NoLayer ones", stage)
		for _, tn := range ts {
			seen[tn.Name]++
			if tn.Layer != NoLayer {
				assert.GreaterOrEqual(t, tn.Layer, pp4.Stages[stage].First)
				assert.Less(t, tn.Layer, pp4.Stages[stage].End)
			}
		}
	}
	for _, tn := range modelTensors() {
		if tn.Layer == NoLayer {
			assert.Equal(t, 4, seen[tn.Name], "%s goes with every stage", tn.Name)
		} else {
			assert.Equal(t, 1, seen[tn.Name], "%s goes with exactly one stage", tn.Name)
		}
	}

	dp2 := PlanInfo{World: 2, PP: 1, DP: 2, TP: 1, Stages: []StageLayers{{0, 8}}}
	all := snap.ForStage(dp2, 0)
	assert.Len(t, all, 18)
	requireSameTensors(t, all)
	assert.Nil(t, snap.ForStage(dp2, 1), "a stage the plan does not have")
	assert.Len(t, snap.ForStage(PlanInfo{World: 2, PP: 1, DP: 2, TP: 1}, 0), 18, "no stages: one stage holds all")
}

func TestSnapshotRejectsConflictingDuplicates(t *testing.T) {
	root := t.TempDir()
	plan := PlanInfo{World: 2, PP: 1, DP: 2, TP: 1}
	save := func(rank int, data []byte) {
		opts := smallOptions(RankDir(root, rank), zerolog.Nop())
		opts.Rank = rank
		e := openEngine(t, opts)
		saveWait(t, e, 1, Shard{Rank: rank, Tensors: []Tensor{{Name: "w", Layer: 0, DType: Uint8, Shape: []int64{4}, Data: data}}}, plan)
		require.NoError(t, e.Close())
	}
	save(0, []byte{1, 2, 3, 4})
	save(1, []byte{1, 2, 3, 4}) // an identical replica is fine
	snap, err := LoadSnapshot(context.Background(), LocalRoot(root, zerolog.Nop()), 1, zerolog.Nop())
	require.NoError(t, err)
	assert.Equal(t, []string{"w"}, snap.Names())

	root = t.TempDir()
	save(0, []byte{1, 2, 3, 4})
	save(1, []byte{1, 2, 3, 5})
	_, err = LoadSnapshot(context.Background(), LocalRoot(root, zerolog.Nop()), 1, zerolog.Nop())
	require.ErrorContains(t, err, "tensor w differs")
}
