package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
)

// upPlan has room for the ranks the uploader tests use.
var upPlan = checkpoint.PlanInfo{World: 4, PP: 1, DP: 4, TP: 1}

// upSource is an in-memory ShardSource that counts opens and releases.
type upSource struct {
	meta     checkpoint.ShardMeta
	data     []byte
	opened   atomic.Int32
	released atomic.Int32
}

func (s *upSource) Meta() checkpoint.ShardMeta { return s.meta }

func (s *upSource) OpenData() (io.ReaderAt, func() error, error) {
	s.opened.Add(1)
	return bytes.NewReader(s.data), func() error { s.released.Add(1); return nil }, nil
}

func upShard(t *testing.T, rank int, step int64, emergency bool) *upSource {
	t.Helper()
	meta, data, err := checkpoint.EncodeShard(step, rtShard(rank, step, 32), upPlan, nil, 0)
	require.NoError(t, err)
	meta.Emergency = emergency
	return &upSource{meta: meta, data: data}
}

// upOutcomes records OnDone calls.
type upOutcomes struct {
	mu   sync.Mutex
	list []upOutcome
}

type upOutcome struct {
	step      int64
	rank      int
	committed bool
	err       error
}

func (o *upOutcomes) record(m checkpoint.ShardMeta, committed bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.list = append(o.list, upOutcome{m.Step, m.Rank, committed, err})
}

func (o *upOutcomes) get() []upOutcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]upOutcome(nil), o.list...)
}

// dataPuts lists the data objects a Fake was asked to store, in order.
func dataPuts(f *store.Fake) []string {
	var keys []string
	for _, c := range f.Calls() {
		if c.Op == store.OpPut && strings.HasSuffix(c.Key, ".data") && c.Err == nil {
			keys = append(keys, c.Key)
		}
	}
	return keys
}

func TestUploaderUploadsAndCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := store.NewFake()
	r := &checkpoint.Remote{Store: f}
	var out upOutcomes
	u := checkpoint.NewUploader(checkpoint.UploaderOptions{Remote: r, OnDone: out.record})
	defer u.Close()

	var srcs []*upSource
	for rank := range upPlan.World {
		s := upShard(t, rank, 50, false)
		srcs = append(srcs, s)
		u.Enqueue(s)
	}
	require.NoError(t, u.Flush(ctx))
	assert.Zero(t, u.Pending())
	steps, err := r.DurableSteps(ctx)
	require.NoError(t, err)
	assert.Equal(t, []int64{50}, steps)
	for _, s := range srcs {
		assert.Equal(t, int32(1), s.opened.Load())
		assert.Equal(t, int32(1), s.released.Load(), "the data is released after the upload")
	}
	outcomes := out.get()
	require.Len(t, outcomes, 4)
	committed := 0
	for _, o := range outcomes {
		assert.NoError(t, o.err)
		if o.committed {
			committed++
		}
	}
	assert.GreaterOrEqual(t, committed, 1, "the upload that completed the step says so")
}

func TestUploaderPrioritizesEmergencyAndDropsSuperseded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := store.NewFake()
	started := make(chan struct{})
	gate := make(chan struct{})
	var once sync.Once
	f.Hook = func(op store.Op, key string) error {
		if op == store.OpPut && key == "step-000000000001/rank-00000.data" {
			once.Do(func() { close(started) })
			<-gate
		}
		return nil
	}
	var out upOutcomes
	u := checkpoint.NewUploader(checkpoint.UploaderOptions{Remote: &checkpoint.Remote{Store: f, Retain: -1}, Concurrency: 1, OnDone: out.record})
	defer u.Close()

	u.Enqueue(upShard(t, 0, 1, false)) // taken at once, held by the gate
	<-started
	u.Enqueue(upShard(t, 1, 2, false)) // superseded by the next one
	u.Enqueue(upShard(t, 1, 3, false))
	u.Enqueue(upShard(t, 1, 2, false)) // older than the queued step 3 of rank 1: dropped
	u.Enqueue(upShard(t, 2, 2, true))  // emergency: goes first
	u.Enqueue(upShard(t, 2, 4, false)) // newer, but an emergency shard is never dropped
	u.Enqueue(upShard(t, 3, 2, false))
	u.Enqueue(upShard(t, 3, 2, false)) // duplicate
	assert.Equal(t, 5, u.Pending(), "one in flight, four queued")
	close(gate)
	require.NoError(t, u.Flush(ctx))

	assert.Equal(t, []string{
		"step-000000000001/rank-00000.data",
		"step-000000000002/rank-00002.data", // the emergency shard
		"step-000000000003/rank-00001.data",
		"step-000000000004/rank-00002.data",
		"step-000000000002/rank-00003.data",
	}, dataPuts(f))

	var superseded []upOutcome
	for _, o := range out.get() {
		if errors.Is(o.err, checkpoint.ErrSuperseded) {
			superseded = append(superseded, upOutcome{step: o.step, rank: o.rank})
		} else {
			assert.NoError(t, o.err)
		}
	}
	assert.ElementsMatch(t, []upOutcome{{step: 2, rank: 1}, {step: 2, rank: 1}, {step: 2, rank: 3}}, superseded)
}

func TestUploaderRetriesTransientFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := store.NewFake()
	f.FailNext(store.OpPut, errors.New("503 slow down"))
	f.FailNext(store.OpPut, errors.New("connection reset"))
	var out upOutcomes
	u := checkpoint.NewUploader(checkpoint.UploaderOptions{Remote: &checkpoint.Remote{Store: f}, Backoff: time.Millisecond, OnDone: out.record})
	defer u.Close()
	u.Enqueue(upShard(t, 0, 1, false))
	require.NoError(t, u.Flush(ctx))
	require.Len(t, out.get(), 1)
	assert.NoError(t, out.get()[0].err)
	assert.Equal(t, []string{"step-000000000001/rank-00000.data"}, dataPuts(f))
	puts := 0
	for _, c := range f.Calls() {
		if c.Op == store.OpPut && strings.HasSuffix(c.Key, ".data") {
			puts++
		}
	}
	assert.Equal(t, 3, puts, "two failures, then success")
}

func TestUploaderGivesUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := store.NewFake()
	for range 3 {
		f.FailNext(store.OpPut, errors.New("503"))
	}
	var out upOutcomes
	u := checkpoint.NewUploader(checkpoint.UploaderOptions{Remote: &checkpoint.Remote{Store: f}, MaxAttempts: 2, Backoff: time.Millisecond, OnDone: out.record})
	defer u.Close()
	u.Enqueue(upShard(t, 0, 1, false))
	err := u.Flush(ctx)
	require.ErrorContains(t, err, "503")
	require.Len(t, out.get(), 1)
	assert.Error(t, out.get()[0].err)
	assert.NoError(t, u.Flush(ctx), "a failure is reported to one Flush")

	// Data that does not match its checksum is not retried.
	bad := upShard(t, 1, 1, false)
	bad.data = append([]byte(nil), bad.data...)
	bad.data[0] ^= 1
	u.Enqueue(bad)
	require.ErrorIs(t, u.Flush(ctx), store.ErrChecksum)
	assert.Equal(t, int32(1), bad.opened.Load())
	assert.Equal(t, int32(1), bad.released.Load())
}

func TestUploaderBandwidthAndClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := store.NewFake()
	var out upOutcomes
	u := checkpoint.NewUploader(checkpoint.UploaderOptions{Remote: &checkpoint.Remote{Store: f}, Concurrency: 1, OnDone: out.record})
	assert.Zero(t, u.Bandwidth(), "unknown before the first upload")

	meta, data, err := checkpoint.EncodeShard(1, checkpoint.Shard{Tensors: []checkpoint.Tensor{rtFloats("w", 0, 1<<16, 1)}}, upPlan, nil, 0)
	require.NoError(t, err)
	u.Enqueue(&upSource{meta: meta, data: data})
	require.NoError(t, u.Flush(ctx))
	assert.Positive(t, u.Bandwidth())

	gate := make(chan struct{})
	started := make(chan struct{})
	var once sync.Once
	blocked := store.NewFake()
	blocked.Hook = func(op store.Op, key string) error {
		if op == store.OpPut {
			once.Do(func() { close(started) })
			<-gate
		}
		return nil
	}
	u2 := checkpoint.NewUploader(checkpoint.UploaderOptions{Remote: &checkpoint.Remote{Store: blocked}, Concurrency: 1, OnDone: out.record})
	u2.Enqueue(upShard(t, 0, 7, false))
	<-started
	u2.Enqueue(upShard(t, 1, 7, false))
	flushCtx, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, u2.Flush(flushCtx), context.Canceled)

	closed := make(chan error)
	go func() { closed <- u2.Close() }()
	// Close drops the queued shard at once, then waits for the one in flight.
	deadline := time.Now().Add(10 * time.Second)
	for u2.Pending() != 1 {
		require.True(t, time.Now().Before(deadline), "Close did not drop the queued shard")
		time.Sleep(time.Millisecond)
	}
	close(gate)
	require.NoError(t, <-closed)
	var closedErrs int
	for _, o := range out.get() {
		if errors.Is(o.err, checkpoint.ErrClosed) {
			closedErrs++
		}
	}
	assert.Equal(t, 1, closedErrs, "the queued shard is dropped by Close")
	u2.Enqueue(upShard(t, 2, 7, false))
	assert.Zero(t, u2.Pending(), "a closed uploader takes nothing")
	require.NoError(t, u.Close())
}
