package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
)

func snapshotOf(shards ...checkpoint.Shard) *checkpoint.Snapshot {
	s := &checkpoint.Snapshot{Step: 9, Tensors: map[string]checkpoint.Tensor{}}
	for _, sh := range shards {
		m := checkpoint.ShardMeta{Rank: sh.Rank, Extra: map[string]string{"rank": string(rune('0' + sh.Rank))}}
		for _, tn := range sh.Tensors {
			m.Tensors = append(m.Tensors, checkpoint.TensorMeta{Name: tn.Name, Layer: tn.Layer})
			s.Tensors[tn.Name] = tn
		}
		s.Shards = append(s.Shards, m)
	}
	return s
}

func names(ts []checkpoint.Tensor) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

func TestSelectTensors(t *testing.T) {
	snap := snapshotOf(testShard(0, 9, 64), testShard(1, 9, 64), testShard(2, 9, 64))
	plan := checkpoint.PlanInfo{World: 2, Stages: []checkpoint.StageLayers{{First: 0, End: 2}, {First: 2, End: 3}}}

	sel, err := selectTensors(snap, Request{}, 1, plan)
	require.NoError(t, err)
	assert.Equal(t, []string{"layers.1.weight", "layers.1.bias", "rank1.step"}, names(sel.tensors), "a rank's own shard, in its order")
	assert.Equal(t, "1", sel.extra["rank"])

	stage := 1
	sel, err = selectTensors(snap, Request{Stage: &stage}, 0, plan)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"layers.2.weight", "layers.2.bias", "rank0.step", "rank1.step", "rank2.step"}, names(sel.tensors))

	sel, err = selectTensors(snap, Request{Layers: []int{0, 1}}, -1, plan)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"layers.0.weight", "layers.0.bias", "rank0.step", "rank1.step", "rank2.step"}, names(sel.tensors))

	sel, err = selectTensors(snap, Request{All: true}, -1, plan)
	require.NoError(t, err)
	assert.Len(t, sel.tensors, 9)

	stage = 2
	_, err = selectTensors(snap, Request{Stage: &stage}, 0, plan)
	requireBadRequest(t, err)
	_, err = selectTensors(snap, Request{Layers: []int{3, 1}}, 0, plan)
	requireBadRequest(t, err)
	_, err = selectTensors(snap, Request{}, -1, plan)
	requireBadRequest(t, err)
	_, err = selectTensors(snap, Request{}, 5, plan)
	require.ErrorIs(t, err, checkpoint.ErrNoCheckpoint)
}

func requireBadRequest(t *testing.T, err error) {
	t.Helper()
	var re *requestError
	require.ErrorAs(t, err, &re)
}
