package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
)

func TestSaveWaitLoadByteExact(t *testing.T) {
	ctx := context.Background()
	r := startAgent(t, testOptions(t))
	c := r.dial(t, 0, plan1())

	for step := int64(1); step <= 3; step++ {
		emergency, err := c.Save(ctx, step, testShard(0, step, 3<<20), map[string]string{"iter": "x"}, false)
		require.NoError(t, err)
		assert.False(t, emergency)
		got, err := c.Wait(ctx, step, DurableLocal)
		require.NoError(t, err)
		assert.Equal(t, step, got)
	}
	res, err := c.Load(ctx, LoadRequest{Step: -1})
	require.NoError(t, err)
	assert.Equal(t, int64(3), res.Step)
	assert.Equal(t, map[string]string{"iter": "x"}, res.Extra)
	requireTensors(t, testShard(0, 3, 3<<20).Tensors, res.Tensors)

	res, err = c.Load(ctx, LoadRequest{Step: 2})
	require.NoError(t, err, "the previous commit stays as a fallback")
	requireTensors(t, testShard(0, 2, 3<<20).Tensors, res.Tensors)

	entries, err := os.ReadDir(r.opts.ShmDir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotContains(t, e.Name(), "-load-", "the client removes each restore file")
	}
}

func TestSeveralRanksSaveAndRestoreByStage(t *testing.T) {
	ctx := context.Background()
	r := startAgent(t, testOptions(t))
	plan := checkpoint.PlanInfo{World: 3, PP: 3, DP: 1, TP: 1, Stages: []checkpoint.StageLayers{{First: 0, End: 1}, {First: 1, End: 2}, {First: 2, End: 3}}}
	clients := make([]*Client, plan.World)
	for rank := range clients {
		clients[rank] = r.dial(t, rank, plan)
	}
	var wg sync.WaitGroup
	errs := make([]error, plan.World)
	for rank, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for step := int64(1); step <= 4; step++ {
				if _, err := c.Save(ctx, step, testShard(rank, step, 1<<20), map[string]string{"rank": string(rune('0' + rank))}, false); err != nil {
					errs[rank] = err
					return
				}
			}
			_, errs[rank] = c.Wait(ctx, 4, DurableLocal)
		}()
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))

	for rank, c := range clients {
		res, err := c.Load(ctx, LoadRequest{Step: -1})
		require.NoError(t, err)
		assert.Equal(t, int64(4), res.Step)
		assert.Equal(t, "0123"[rank:rank+1], res.Extra["rank"])
		requireTensors(t, testShard(rank, 4, 1<<20).Tensors, res.Tensors)
	}

	stage := 1
	res, err := clients[0].Load(ctx, LoadRequest{Step: 4, Stage: &stage})
	require.NoError(t, err)
	var want []checkpoint.Tensor
	want = append(want, testShard(1, 4, 1<<20).Tensors...)
	want = append(want, testShard(0, 4, 1<<20).Tensors[2], testShard(2, 4, 1<<20).Tensors[2]) // no-layer tensors go with every stage
	requireTensors(t, want, res.Tensors)

	res, err = clients[2].Load(ctx, LoadRequest{Step: -1, All: true})
	require.NoError(t, err)
	assert.Len(t, res.Tensors, 9)
}

func TestBackPressureLosesNoSave(t *testing.T) {
	ctx := context.Background()
	opts := testOptions(t)
	opts.MaxInFlight = 1
	opts.StagingBytes = 512 << 10 // two chunks for shards of four
	r := startAgent(t, opts)
	c := r.dial(t, 0, plan1())
	const steps = 12
	for step := int64(1); step <= steps; step++ {
		_, err := c.Save(ctx, step, testShard(0, step, 1<<20), nil, false)
		require.NoError(t, err)
	}
	for step := int64(1); step <= steps; step++ {
		got, err := c.Wait(ctx, step, DurableLocal)
		require.NoError(t, err, "step %d", step)
		assert.GreaterOrEqual(t, got, step)
	}
	res, err := c.Load(ctx, LoadRequest{Step: -1})
	require.NoError(t, err)
	assert.Equal(t, int64(steps), res.Step)
	requireTensors(t, testShard(0, steps, 1<<20).Tensors, res.Tensors)
}

func TestBadRequestsLeaveTheConnectionUsable(t *testing.T) {
	ctx := context.Background()
	r := startAgent(t, testOptions(t))
	c, err := Dial(ctx, r.sock)
	require.NoError(t, err)
	defer c.Close()

	_, err = c.Wait(ctx, 1, DurableLocal)
	requireCode(t, err, CodeBadRequest)
	_, err = c.Hello(ctx, 2, plan1())
	requireCode(t, err, CodeBadRequest) // rank outside the world
	_, err = c.Hello(ctx, 0, plan1())
	require.NoError(t, err)

	outside := filepath.Join(t.TempDir(), shmPrefix+"x")
	require.NoError(t, os.WriteFile(outside, make([]byte, 64), 0o600))
	_, err = c.call(ctx, Request{Op: OpSave, Step: 1, Shm: outside})
	requireCode(t, err, CodeBadRequest)

	inside := filepath.Join(r.opts.ShmDir, shmPrefix+"short")
	require.NoError(t, os.WriteFile(inside, make([]byte, 16), 0o600))
	_, err = c.call(ctx, Request{Op: OpSave, Step: 1, Shm: inside, Tensors: []checkpoint.TensorMeta{{Name: "w", DType: checkpoint.Float32, Shape: []int64{8}, Offset: 0, Length: 32}}})
	requireCode(t, err, CodeBadRequest)

	_, err = c.Wait(ctx, 7, DurableLocal)
	requireCode(t, err, CodeBadRequest) // never saved
	_, err = c.Load(ctx, LoadRequest{Step: -1})
	require.ErrorIs(t, err, checkpoint.ErrNoCheckpoint)
	_, err = c.call(ctx, Request{Op: "fly"})
	requireCode(t, err, CodeBadRequest)

	_, err = c.Save(ctx, 1, testShard(0, 1, 4096), nil, false)
	require.NoError(t, err, "the connection survives every refusal")
}

func requireCode(t *testing.T, err error, code string) {
	t.Helper()
	var ae *Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, code, ae.Code, ae.Message)
}
