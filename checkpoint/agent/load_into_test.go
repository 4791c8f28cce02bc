package agent

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
)

// loadFiles lists the restore files in dir (every process's, the test's own agent included; a
// client's save buffer is not one).
func loadFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), shmPrefix+"load-") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestACorruptChunkInTheSelectionFailsAndLeavesNoFile(t *testing.T) {
	ctx := context.Background()
	opts := testOptions(t)
	r := startAgent(t, opts)
	c := r.dial(t, 0, plan1())
	for step := int64(1); step <= 2; step++ {
		_, err := c.Save(ctx, step, testShard(0, step, 1<<20), nil, false)
		require.NoError(t, err)
		_, err = c.Wait(ctx, step, DurableLocal)
		require.NoError(t, err)
	}
	corruptNewestData(t, checkpoint.RankDir(opts.Dir, 0), 2) // inside layers.0.weight
	all := func(snap *checkpoint.Snapshot) (selection, error) {
		return selectTensors(snap, Request{All: true}, 0, snap.Plan)
	}

	_, err := r.a.restore(ctx, 2, all)
	require.ErrorIs(t, err, checkpoint.ErrCorrupt)
	assert.Empty(t, loadFiles(t, opts.ShmDir), "a failed restore leaves no shared memory behind")

	_, err = c.Load(ctx, LoadRequest{Step: 2})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "crc32c")
	assert.Empty(t, loadFiles(t, opts.ShmDir))

	res, err := c.Load(ctx, LoadRequest{Step: -1})
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.Step, "the newest intact step")
	requireTensors(t, testShard(0, 1, 1<<20).Tensors, res.Tensors)
	assert.Empty(t, loadFiles(t, opts.ShmDir), "the client removed the one restore file")
}

func TestARestoreOfTensorsStraddlingChunksIsByteExact(t *testing.T) {
	// 4 KiB chunks: the 1 MiB weight spans 257 chunks, each read through scratch, and the last
	// holds all three tensors. 384 KiB chunks: the weight's pieces are read in place.
	for _, chunk := range []int64{4 << 10, 384 << 10} {
		ctx := context.Background()
		opts := testOptions(t)
		opts.ChunkSize = chunk
		r := startAgent(t, opts)
		c := r.dial(t, 0, plan1())
		shard := testShard(0, 1, 1<<20+13)
		_, err := c.Save(ctx, 1, shard, nil, false)
		require.NoError(t, err)
		_, err = c.Wait(ctx, 1, DurableLocal)
		require.NoError(t, err)

		res, err := c.Load(ctx, LoadRequest{Step: 1})
		require.NoError(t, err)
		requireTensors(t, shard.Tensors, res.Tensors)
	}
}
