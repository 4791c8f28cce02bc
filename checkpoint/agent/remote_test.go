package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
)

// TestReplacementMachineRestoresFromTheStore: an agent in both mode uploads what it commits; a
// fresh agent on another (empty) directory restores the newest step from the store.
func TestReplacementMachineRestoresFromTheStore(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "file://"+t.TempDir())
	require.NoError(t, err)
	plan := checkpoint.PlanInfo{World: 2, PP: 2, DP: 1, TP: 1, Stages: []checkpoint.StageLayers{{First: 0, End: 1}, {First: 1, End: 2}}}

	opts := testOptions(t)
	opts.Store = st
	first := startAgent(t, opts)
	clients := []*Client{first.dial(t, 0, plan), first.dial(t, 1, plan)}
	for step := int64(1); step <= 3; step++ {
		for rank, c := range clients {
			_, err := c.Save(ctx, step, testShard(rank, step, 1<<20), map[string]string{"step": "s"}, false)
			require.NoError(t, err)
		}
	}
	for _, c := range clients {
		got, err := c.Wait(ctx, 3, DurableRemote)
		require.NoError(t, err)
		assert.Equal(t, int64(3), got)
	}
	s, err := clients[0].Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, ModeBoth, s.Mode)
	assert.Contains(t, s.RemoteDurable, int64(3))
	first.stop()

	opts = testOptions(t) // a new, empty directory
	opts.Store = st
	second := startAgent(t, opts)
	for rank := range 2 {
		c := second.dial(t, rank, plan)
		res, err := c.Load(ctx, LoadRequest{Step: -1})
		require.NoError(t, err)
		assert.Equal(t, int64(3), res.Step)
		assert.True(t, strings.HasPrefix(res.Source, "remote:"), res.Source)
		requireTensors(t, testShard(rank, 3, 1<<20).Tensors, res.Tensors)
		assert.Equal(t, "s", res.Extra["step"])
	}
}

// TestRemoteModeKeepsNothingLocal: in remote mode a save is durable once uploaded, wait local
// means remote, and the restore comes from the store.
func TestRemoteModeKeepsNothingLocal(t *testing.T) {
	ctx := context.Background()
	fake := store.NewFake()
	opts := testOptions(t)
	opts.Dir = ""
	opts.Mode = ModeRemote
	opts.Store = fake
	opts.MaxInFlight = 1 // every save waits for the previous upload: back-pressure in memory
	r := startAgent(t, opts)
	c := r.dial(t, 0, plan1())
	for step := int64(1); step <= 4; step++ {
		_, err := c.Save(ctx, step, testShard(0, step, 1<<20), nil, false)
		require.NoError(t, err)
	}
	got, err := c.Wait(ctx, 4, DurableLocal)
	require.NoError(t, err)
	assert.Equal(t, int64(4), got)
	res, err := c.Load(ctx, LoadRequest{Step: -1})
	require.NoError(t, err)
	assert.Equal(t, int64(4), res.Step)
	requireTensors(t, testShard(0, 4, 1<<20).Tensors, res.Tensors)
	s, err := c.Status(ctx)
	require.NoError(t, err)
	require.Len(t, s.Ranks, 1)
	assert.Equal(t, int64(4), s.Ranks[0].Latest)
}

// TestNewerStepInTheStoreBeatsAStaleLocalDisk: a machine whose disk comes back after the job
// moved on elsewhere restores the newer step from the store, not its own older one.
func TestNewerStepInTheStoreBeatsAStaleLocalDisk(t *testing.T) {
	ctx := context.Background()
	st := store.NewFake()
	oldDisk := t.TempDir()
	saveSteps := func(dir string, from, to int64) {
		opts := testOptions(t)
		opts.Dir, opts.Store = dir, st
		r := startAgent(t, opts)
		c := r.dial(t, 0, plan1())
		for step := from; step <= to; step++ {
			_, err := c.Save(ctx, step, testShard(0, step, 64<<10), nil, false)
			require.NoError(t, err)
		}
		_, err := c.Wait(ctx, to, DurableRemote)
		require.NoError(t, err)
		r.stop()
	}
	saveSteps(oldDisk, 1, 2)
	saveSteps(t.TempDir(), 3, 4) // the job went on on another machine

	opts := testOptions(t)
	opts.Dir, opts.Store = oldDisk, st
	r := startAgent(t, opts)
	c := r.dial(t, 0, plan1())
	res, err := c.Load(ctx, LoadRequest{Step: -1})
	require.NoError(t, err)
	assert.Equal(t, int64(4), res.Step)
	assert.True(t, strings.HasPrefix(res.Source, "remote:"), res.Source)
	requireTensors(t, testShard(0, 4, 64<<10).Tensors, res.Tensors)

	res, err = c.Load(ctx, LoadRequest{Step: 2})
	require.NoError(t, err, "an exact step still comes from the local disk")
	assert.True(t, strings.HasPrefix(res.Source, "local:"), res.Source)
}
