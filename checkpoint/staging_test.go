package checkpoint

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSaveBlocksWhileStagingIsFull(t *testing.T) {
	opts := smallOptions(t.TempDir(), zerolog.Nop())
	opts.Writers = 2
	opts.StagingBytes = 2 * opts.ChunkSize
	e := openEngine(t, opts)
	require.Equal(t, 2*opts.ChunkSize, e.staging.capacity())

	release := make(chan struct{})
	var stalled atomic.Int32
	e.hooks.beforeChunkWrite = func(uint64, int) {
		stalled.Add(1)
		<-release
	}
	shard := testShard(1, int(6*opts.ChunkSize+100)) // seven chunks
	type result struct {
		p   *Pending
		err error
	}
	saved := make(chan result, 1)
	go func() {
		p, err := e.Save(context.Background(), SaveRequest{Step: 1, Shard: shard, Plan: plan1})
		saved <- result{p, err}
	}()

	eventually(t, "both writers stalled with both buffers", func() bool {
		return stalled.Load() == 2 && e.staging.inUse.Load() == 2
	})
	select {
	case <-saved:
		t.Fatal("Save returned although the staging pool is full")
	default:
	}

	close(release)
	r := <-saved
	require.NoError(t, r.err)
	_, err := r.p.Wait(context.Background())
	require.NoError(t, err)
	assert.LessOrEqual(t, e.staging.peak.Load(), int64(2), "staging never exceeds its bound")
	got, _, err := e.Read(context.Background(), 1)
	require.NoError(t, err)
	requireShardEqual(t, shard, got)
}

func TestSaveBlocksAtMaxInFlightAndContextCancels(t *testing.T) {
	opts := smallOptions(t.TempDir(), zerolog.Nop())
	opts.MaxInFlight = 1
	e := openEngine(t, opts)
	release := make(chan struct{})
	e.hooks.beforeChunkWrite = func(uint64, int) { <-release }

	ctx := context.Background()
	first, err := e.Save(ctx, SaveRequest{Step: 1, Shard: testShard(1, 1000), Plan: plan1})
	require.NoError(t, err)

	cctx, cancel := context.WithCancel(ctx)
	blocked := make(chan error, 1)
	go func() {
		_, err := e.Save(cctx, SaveRequest{Step: 2, Shard: testShard(2, 1000), Plan: plan1})
		blocked <- err
	}()
	cancel()
	require.ErrorIs(t, <-blocked, context.Canceled, "the second Save waited for the in-flight window")

	close(release)
	_, err = first.Wait(ctx)
	require.NoError(t, err)
	saveWait(t, e, 3, testShard(3, 1000), plan1)
	latest, _ := e.Latest()
	assert.Equal(t, int64(3), latest.Step)
}

func TestCancelledSaveDiscardsTheCheckpoint(t *testing.T) {
	opts := smallOptions(t.TempDir(), zerolog.Nop())
	opts.StagingBytes = 2 * opts.ChunkSize
	e := openEngine(t, opts)
	release := make(chan struct{})
	e.hooks.beforeChunkWrite = func(uint64, int) { <-release }

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.Save(ctx, SaveRequest{Step: 1, Shard: testShard(1, int(5*opts.ChunkSize)), Plan: plan1})
		done <- err
	}()
	eventually(t, "staging full", func() bool { return e.staging.inUse.Load() == 2 })
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	close(release)

	saveWait(t, e, 2, testShard(2, 1000), plan1)
	var steps []int64
	for _, m := range e.Committed() {
		steps = append(steps, m.Step)
	}
	assert.Equal(t, []int64{2}, steps)
	eventually(t, "staging drained", func() bool { return e.staging.inUse.Load() == 0 })
}
