package checkpoint

import (
	"context"
	"fmt"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rankShard is rank's part of a step: tensors named after the rank so names are unique.
func rankShard(step int64, rank int) Shard {
	return Shard{Rank: rank, Tensors: []Tensor{
		{Name: fmt.Sprintf("rank%d.w", rank), Layer: rank, DType: Uint8, Shape: []int64{5000},
			Data: patternBytes(step*100+int64(rank), 5000)},
	}}
}

func TestLocalRootDurableStepsNeedEveryRank(t *testing.T) {
	root := t.TempDir()
	engines := make([]*Engine, 4)
	for r := range engines {
		opts := smallOptions(RankDir(root, r), zerolog.Nop())
		opts.Rank, opts.MaxInFlight, opts.KeepCommitted = r, 1, 5
		engines[r] = openEngine(t, opts)
	}
	world4 := PlanInfo{World: 4, PP: 4, DP: 1, TP: 1}
	world2 := PlanInfo{World: 2, PP: 2, DP: 1, TP: 1}
	save := func(step int64, plan PlanInfo, ranks ...int) {
		for _, r := range ranks {
			saveWait(t, engines[r], step, rankShard(step, r), plan)
		}
	}
	save(1, world4, 0, 1, 2, 3)
	save(2, world4, 0, 1, 2) // rank 3 never committed step 2
	save(3, world4, 0, 1, 2, 3)
	save(4, world4, 0)
	save(5, world2, 0, 1) // a smaller world: ranks 0 and 1 are all it needs

	src := LocalRoot(root, zerolog.Nop())
	steps, err := src.DurableSteps(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []int64{5, 3, 1}, steps)
	assert.Equal(t, "local:"+root, src.String())

	shard, m, err := src.ReadShard(context.Background(), 3, 2)
	require.NoError(t, err)
	assert.Equal(t, 2, m.Rank)
	requireShardEqual(t, rankShard(3, 2), shard)
	_, _, err = src.ReadShard(context.Background(), 2, 3)
	require.ErrorIs(t, err, ErrNoCheckpoint)

	snap, err := LoadSnapshot(context.Background(), src, 3, zerolog.Nop())
	require.NoError(t, err)
	assert.Equal(t, []string{"rank0.w", "rank1.w", "rank2.w", "rank3.w"}, snap.Names())
	assert.Len(t, snap.Shards, 4)
	assert.Equal(t, world4, snap.Plan)
	snap, err = LoadSnapshot(context.Background(), src, -1, zerolog.Nop())
	require.NoError(t, err)
	assert.Equal(t, int64(5), snap.Step)
	assert.Equal(t, []string{"rank0.w", "rank1.w"}, snap.Names())
}

func TestLocalRootOfAMissingDirectoryIsEmpty(t *testing.T) {
	src := LocalRoot(t.TempDir()+"/nothing", zerolog.Nop())
	steps, err := src.DurableSteps(context.Background())
	require.NoError(t, err)
	assert.Empty(t, steps)
	_, err = LoadSnapshot(context.Background(), src, -1, zerolog.Nop())
	require.ErrorIs(t, err, ErrNoCheckpoint)
}
