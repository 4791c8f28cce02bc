package sim

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
)

// TestDiscardUncommittedFollowsTheLayout writes shards through the remote tier itself and
// checks DiscardUncommitted removes exactly the stale, uncommitted ones of its rank.
func TestDiscardUncommittedFollowsTheLayout(t *testing.T) {
	ctx := context.Background()
	st := store.NewFake()
	r := &checkpoint.Remote{Store: st, Retain: -1}
	plan := checkpoint.PlanInfo{World: 2, PP: 2, DP: 1, TP: 1}
	put := func(step int64, rank int) {
		shard := checkpoint.Shard{Rank: rank, Tensors: ExpectedLayer(1, rank, step)}
		meta, data, err := checkpoint.EncodeShard(step, shard, plan, nil, 0)
		require.NoError(t, err)
		_, err = r.PutShard(ctx, meta, bytes.NewReader(data))
		require.NoError(t, err)
	}
	put(5, 1) // stale, but before the restore point: left alone
	put(10, 0)
	put(10, 1) // durable
	put(20, 0)
	put(20, 1) // durable, after the restore point: kept
	put(30, 0) // stale, rank 0
	put(40, 1) // stale, rank 1
	cleaned, err := DiscardUncommitted(ctx, st, 1, 10)
	require.NoError(t, err)
	require.Equal(t, []int64{40}, cleaned)
	steps, err := r.Steps(ctx)
	require.NoError(t, err)
	byStep := map[int64]checkpoint.StepInfo{}
	for _, s := range steps {
		byStep[s.Step] = s
	}
	require.True(t, byStep[10].Durable)
	require.True(t, byStep[20].Durable)
	require.Equal(t, []int{0}, byStep[30].Ranks, "rank 0's shard is not rank 1's to delete")
	_, still := byStep[40]
	require.False(t, still)
	require.Equal(t, []int{1}, byStep[5].Ranks)
}
