package agent

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
)

// TestKilledMidUploadResumesOnRestart: an agent killed with SIGKILL while uploading a locally
// committed step used to leave the store a step behind for good (a replacement machine restored
// older state) and its partial temp file forever. A new agent on the same directory uploads
// the step and removes the leftovers.
func TestKilledMidUploadResumesOnRestart(t *testing.T) {
	ctx := context.Background()
	dir, shm, root := t.TempDir(), t.TempDir(), t.TempDir()
	sock := shortSock(t)
	child := startChildAgent(t, dir, shm, sock, childStallEnv+"="+root)
	defer child.stop()

	c := child.dial(ctx, t)
	_, err := c.Hello(ctx, 0, plan1())
	require.NoError(t, err)
	want := testShard(0, 7, 2<<20)
	_, err = c.Save(ctx, 7, want, nil, false)
	require.NoError(t, err)
	_, err = c.Wait(ctx, 7, DurableLocal)
	require.NoError(t, err)
	eventually(t, 20*time.Second, func() bool { return len(tempFiles(t, root)) > 0 }, "the upload to start")
	require.NoError(t, child.kill())
	<-child.exited
	_ = c.Close()

	st, err := store.NewDir(root)
	require.NoError(t, err)
	remote := &checkpoint.Remote{Store: st, Logger: zerolog.Nop()}
	steps, err := remote.DurableSteps(ctx)
	require.NoError(t, err)
	require.Empty(t, steps, "the killed agent uploaded nothing")

	opts := testOptions(t)
	opts.Dir, opts.ShmDir, opts.Store = dir, shm, st
	opts.StaleUploads = time.Nanosecond // the killed agent's temp file is abandoned at once
	startAgent(t, opts)
	eventually(t, 20*time.Second, func() bool {
		steps, err := remote.DurableSteps(ctx)
		return err == nil && len(steps) == 1 && steps[0] == 7
	}, "step 7 to be uploaded after the restart")
	eventually(t, 10*time.Second, func() bool { return len(tempFiles(t, root)) == 0 }, "the partial upload to be removed")
	shard, _, err := remote.ReadShard(ctx, 7, 0)
	require.NoError(t, err)
	requireTensors(t, want.Tensors, shard.Tensors)
	assert.Empty(t, shmFiles(t, shm), "the killed agent's clients' buffers are swept")
}
