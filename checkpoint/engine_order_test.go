package checkpoint

import (
	"context"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOlderCheckpointFinishingLastNeverReplacesNewer(t *testing.T) {
	dir := t.TempDir()
	opts := smallOptions(dir, zerolog.Nop())
	opts.MaxInFlight = 3
	var commits []int64
	opts.OnCommit = func(m ShardMeta) { commits = append(commits, m.Step) }
	e := openEngine(t, opts)

	release := make(chan struct{})
	const olderSeq = 1 // the first checkpoint of a fresh engine
	e.hooks.beforeChunkWrite = func(seq uint64, _ int) {
		if seq == olderSeq {
			<-release
		}
	}
	ctx := context.Background()
	older, err := e.Save(ctx, SaveRequest{Step: 10, Shard: testShard(10, 30_000), Plan: plan1})
	require.NoError(t, err)
	newer, err := e.Save(ctx, SaveRequest{Step: 20, Shard: testShard(20, 30_000), Plan: plan1})
	require.NoError(t, err)
	mNew, err := newer.Wait(ctx)
	require.NoError(t, err)
	select {
	case <-older.Done():
		t.Fatal("the stalled older checkpoint finished")
	default:
	}

	close(release)
	mOld, err := older.Wait(ctx)
	require.NoError(t, err, "the older checkpoint is committed but superseded")
	assert.Less(t, mOld.Seq, mNew.Seq)
	assert.True(t, older.superseded)

	latest, ok := e.Latest()
	require.True(t, ok)
	assert.Equal(t, int64(20), latest.Step)
	rec, _, ok, err := readPointers(dir)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, mNew.Seq, rec.Seq, "the pointer stays on the newer checkpoint")
	assert.Equal(t, []int64{20}, commits, "OnCommit reports only checkpoints that moved the pointer")

	var steps []int64
	for _, m := range e.Committed() {
		steps = append(steps, m.Step)
	}
	assert.Equal(t, []int64{20, 10}, steps, "the superseded checkpoint is kept as a fallback")

	require.NoError(t, e.Close())
	e2 := openEngine(t, opts)
	latest, ok = e2.Latest()
	require.True(t, ok)
	assert.Equal(t, int64(20), latest.Step, "after reopening too")
	_, m, err := e2.Restore(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(20), m.Step)
}
