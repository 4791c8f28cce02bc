package checkpoint_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/checkpoint/store/s3test"
	"github.com/schooner-ml/schooner/internal/syncbuf"
)

// rtBackend is a store to run the remote tier's tests on, and a way to damage one of its
// objects the way rot or a stray write would.
type rtBackend struct {
	store   store.Store
	corrupt func(t *testing.T, key string)
}

// rtBackends are the in-memory Fake and a real S3 service (versitygw), whose objects are
// corrupted on its disk, behind the service's back.
func rtBackends(t *testing.T) map[string]func(t *testing.T) rtBackend {
	return map[string]func(t *testing.T) rtBackend{
		"fake": func(t *testing.T) rtBackend {
			f := store.NewFake()
			return rtBackend{store: f, corrupt: func(t *testing.T, key string) {
				b, ok := f.Data(key)
				require.True(t, ok, key)
				b[len(b)/2] ^= 0x10
				f.Set(key, b)
			}}
		},
		"versitygw": func(t *testing.T) rtBackend {
			g := s3test.Start(t)
			s, err := g.Store(t, "job")
			require.NoError(t, err)
			return rtBackend{store: s, corrupt: func(t *testing.T, key string) {
				path := filepath.Join(g.Dir, g.Bucket, "job", filepath.FromSlash(key))
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				b[len(b)/2] ^= 0x10
				require.NoError(t, os.WriteFile(path, b, 0o644))
			}}
		},
	}
}

// rtOnEachBackend runs test on every rtBackend, in parallel, with a Remote over it.
func rtOnEachBackend(t *testing.T, test func(t *testing.T, ctx context.Context, b rtBackend, r *checkpoint.Remote)) {
	t.Parallel()
	for name, mk := range rtBackends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := mk(t)
			test(t, context.Background(), b, &checkpoint.Remote{Store: b.store})
		})
	}
}

// rtPut encodes and uploads rank's shard of step.
func rtPut(t *testing.T, r *checkpoint.Remote, rank int, step int64, n int) (checkpoint.ShardMeta, checkpoint.Shard, bool) {
	t.Helper()
	shard := rtShard(rank, step, n)
	meta, data, err := checkpoint.EncodeShard(step, shard, rtPlan, nil, 1<<20)
	require.NoError(t, err)
	committed, err := r.PutShard(context.Background(), meta, bytes.NewReader(data))
	require.NoError(t, err)
	return meta, shard, committed
}

// rtPutStep uploads every rank of step and returns rank 0's shard.
func rtPutStep(t *testing.T, r *checkpoint.Remote, step int64) {
	t.Helper()
	for rank := range rtPlan.World {
		rtPut(t, r, rank, step, 64)
	}
}

func TestRemoteCommitsOnlyAfterAllRanks(t *testing.T) {
	rtOnEachBackend(t, func(t *testing.T, ctx context.Context, b rtBackend, r *checkpoint.Remote) {
		shards := map[int]checkpoint.Shard{}
		for _, rank := range []int{2, 0} {
			_, s, committed := rtPut(t, r, rank, 100, 1000)
			assert.False(t, committed, "rank %d alone does not complete the step", rank)
			shards[rank] = s
		}
		steps, err := r.DurableSteps(ctx)
		require.NoError(t, err)
		assert.Empty(t, steps)

		_, s, committed := rtPut(t, r, 1, 100, 1000)
		shards[1] = s
		assert.True(t, committed, "the last rank's upload commits the step")
		steps, err = r.DurableSteps(ctx)
		require.NoError(t, err)
		assert.Equal(t, []int64{100}, steps)

		c, err := r.Commit(ctx, 100)
		require.NoError(t, err)
		assert.Equal(t, 3, c.World)
		assert.Equal(t, rtPlan, c.Plan)
		require.Len(t, c.Ranks, 3)

		for rank := range 3 {
			got, meta, err := r.ReadShard(ctx, 100, rank)
			require.NoError(t, err)
			assert.Equal(t, shards[rank], got)
			assert.Equal(t, rank, meta.Rank)
		}

		// Uploading a shard again is harmless and reports the step durable.
		_, _, committed = rtPut(t, r, 0, 100, 1000)
		assert.True(t, committed)

		snap, err := checkpoint.LoadSnapshot(ctx, r, -1, zerolog.Nop())
		require.NoError(t, err)
		assert.Equal(t, int64(100), snap.Step)
		assert.Len(t, snap.Tensors, 7)
		assert.Contains(t, r.String(), b.store.String())
	})
}

func TestRemoteRetentionKeepsNewestDurableSteps(t *testing.T) {
	rtOnEachBackend(t, func(t *testing.T, ctx context.Context, b rtBackend, r *checkpoint.Remote) {
		r.Retain = 2

		rtPut(t, r, 0, 5, 10) // an incomplete step that will be older than everything kept
		rtPutStep(t, r, 10)
		rtPutStep(t, r, 20)
		rtPut(t, r, 0, 35, 10) // in progress, newer than the newest durable step
		rtPutStep(t, r, 30)

		steps, err := r.DurableSteps(ctx)
		require.NoError(t, err)
		assert.Equal(t, []int64{30, 20}, steps)
		infos, err := r.Steps(ctx)
		require.NoError(t, err)
		var all []int64
		for _, in := range infos {
			all = append(all, in.Step)
		}
		assert.Equal(t, []int64{35, 30, 20}, all, "steps 10 and 5 are pruned; step 35 is still being uploaded")
		objs, err := b.store.List(ctx, "step-000000000010/")
		require.NoError(t, err)
		assert.Empty(t, objs)

		assert.False(t, infos[0].Durable)
		assert.Equal(t, []int{0}, infos[0].Ranks)
		assert.Equal(t, 3, infos[0].World, "an incomplete step's world comes from its metadata")
		assert.True(t, infos[1].Durable)
		assert.Equal(t, []int{0, 1, 2}, infos[1].Ranks)
		assert.Positive(t, infos[1].Size)
		assert.Empty(t, infos[1].Problem)
	})
}

func TestRemoteReadShardDetectsCorruption(t *testing.T) {
	rtOnEachBackend(t, func(t *testing.T, ctx context.Context, b rtBackend, r *checkpoint.Remote) {
		rtPutStep(t, r, 10)
		rtPutStep(t, r, 20)

		b.corrupt(t, "step-000000000020/rank-00001.data")
		_, _, err := r.ReadShard(ctx, 20, 1)
		require.ErrorIs(t, err, checkpoint.ErrCorrupt)

		b.corrupt(t, "step-000000000010/rank-00002.meta")
		_, _, err = r.ReadShard(ctx, 10, 2)
		require.ErrorIs(t, err, checkpoint.ErrCorrupt)

		_, _, err = r.ReadShard(ctx, 30, 0)
		require.ErrorIs(t, err, checkpoint.ErrNoCheckpoint)
		require.NoError(t, b.store.Delete(ctx, "step-000000000010/rank-00000.data"))
		_, _, err = r.ReadShard(ctx, 10, 0)
		require.ErrorIs(t, err, checkpoint.ErrNoCheckpoint)
	})
}

// Metadata replaced by a valid but different one after the commit is caught by the COMMIT's
// record of its checksum.
func TestRemoteReadShardChecksMetadataAgainstCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := store.NewFake()
	r := &checkpoint.Remote{Store: f}
	rtPutStep(t, r, 10)
	meta, data, err := checkpoint.EncodeShard(10, rtShard(1, 11, 64), rtPlan, nil, 1<<20)
	require.NoError(t, err)
	mb, err := meta.Encode()
	require.NoError(t, err)
	f.Set("step-000000000010/rank-00001.meta", mb)
	f.Set("step-000000000010/rank-00001.data", data)
	_, _, err = r.ReadShard(ctx, 10, 1)
	require.ErrorIs(t, err, checkpoint.ErrCorrupt)
	assert.ErrorContains(t, err, "changed after the commit")
}

func TestRemoteSnapshotFallsBackPastCorruptStep(t *testing.T) {
	rtOnEachBackend(t, func(t *testing.T, ctx context.Context, b rtBackend, r *checkpoint.Remote) {
		rtPutStep(t, r, 10)
		rtPutStep(t, r, 20)
		b.corrupt(t, "step-000000000020/rank-00002.data")

		var logs syncbuf.Buffer
		snap, err := checkpoint.LoadSnapshot(ctx, r, -1, zerolog.New(&logs))
		require.NoError(t, err)
		assert.Equal(t, int64(10), snap.Step, "the corrupt newest step is skipped")
		assert.Contains(t, logs.String(), "falling back to step 10")

		_, err = checkpoint.LoadSnapshot(ctx, r, 20, zerolog.Nop())
		assert.ErrorIs(t, err, checkpoint.ErrCorrupt, "an explicit step does not fall back")
	})
}

func TestRemoteMultipartShardOnS3(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := s3test.Start(t)
	s, err := g.Store(t, "big")
	require.NoError(t, err)
	r := &checkpoint.Remote{Store: s}
	plan := checkpoint.PlanInfo{World: 1, PP: 1, DP: 1, TP: 1}
	shard := checkpoint.Shard{Tensors: []checkpoint.Tensor{rtFloats("w", 0, 3<<20, 1)}} // 12 MiB
	meta, data, err := checkpoint.EncodeShard(1, shard, plan, nil, 4<<20)
	require.NoError(t, err)
	committed, err := r.PutShard(ctx, meta, bytes.NewReader(data))
	require.NoError(t, err)
	assert.True(t, committed)
	assert.Equal(t, int64(3), s.Stats().PartsUploaded)
	got, _, err := r.ReadShard(ctx, 1, 0)
	require.NoError(t, err)
	assert.Equal(t, shard.Tensors[0].Data, got.Tensors[0].Data)
}

func TestRemotePutShardRefusesBadShards(t *testing.T) {
	t.Parallel()
	r := &checkpoint.Remote{Store: store.NewFake()}
	meta, data, err := checkpoint.EncodeShard(1, rtShard(0, 1, 4), rtPlan, nil, 0)
	require.NoError(t, err)
	bad := meta
	bad.Rank = 3
	_, err = r.PutShard(context.Background(), bad, bytes.NewReader(data))
	assert.ErrorContains(t, err, "outside the plan's world of 3")
	bad = meta
	bad.Format = 99
	_, err = r.PutShard(context.Background(), bad, bytes.NewReader(data))
	assert.ErrorContains(t, err, "not supported")
	bad = meta
	bad.CRC32C++
	_, err = r.PutShard(context.Background(), bad, bytes.NewReader(data))
	assert.ErrorIs(t, err, store.ErrChecksum)
}

// A machine that outlived its epoch may finish uploading a shard of the old plan after the
// replan: the new plan's step is not complete until its own rank replaces that shard, and the
// replacing upload commits it. Nothing fails on the way (it used to, and was retried).
func TestRemoteStaleShardOfAnEarlierPlanDelaysTheCommitOnly(t *testing.T) {
	rtOnEachBackend(t, func(t *testing.T, ctx context.Context, b rtBackend, r *checkpoint.Remote) {
		old := checkpoint.PlanInfo{World: 2, PP: 2, DP: 1, TP: 1, Stages: rtPlan.Stages}
		meta, data, err := checkpoint.EncodeShard(100, rtShard(1, 100, 64), old, nil, 1<<20)
		require.NoError(t, err)
		_, err = r.PutShard(ctx, meta, bytes.NewReader(data))
		require.NoError(t, err)

		for _, rank := range []int{0, 2} {
			_, _, committed := rtPut(t, r, rank, 100, 64)
			assert.False(t, committed, "rank 1's shard is the old plan's")
		}
		_, _, committed := rtPut(t, r, 1, 100, 64)
		assert.True(t, committed, "this plan's rank 1 completes the step")
		c, err := r.Commit(ctx, 100)
		require.NoError(t, err)
		assert.Equal(t, rtPlan.World, c.World)
	})
}
