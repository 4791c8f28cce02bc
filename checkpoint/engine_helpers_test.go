package checkpoint

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/internal/wait"
)

// patternBytes is n bytes that are a pure function of seed (splitmix64), so a test can check a
// restored checkpoint byte for byte without keeping what it saved.
func patternBytes(seed int64, n int) []byte {
	b := make([]byte, n+8)
	x := uint64(seed)*0x9e3779b97f4a7c15 + 1
	for i := 0; i < n; i += 8 {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		binary.LittleEndian.PutUint64(b[i:], z^(z>>31))
	}
	return b[:n:n]
}

// testShard is a deterministic shard of about size bytes for step: three tensors (two layers
// and a NoLayer one), contents a function of step.
func testShard(step int64, size int) Shard {
	a := size / 2 / 4 * 4
	b := (size - a) / 2 / 2 * 2
	c := size - a - b
	return Shard{Tensors: []Tensor{
		{Name: "layers.0.w", Layer: 0, DType: Float32, Shape: []int64{int64(a / 4)}, Data: patternBytes(step*3, a)},
		{Name: "layers.1.w", Layer: 1, DType: BFloat16, Shape: []int64{int64(b / 2)}, Data: patternBytes(step*3+1, b)},
		{Name: "opt.state", Layer: NoLayer, DType: Uint8, Shape: []int64{int64(c)}, Data: patternBytes(step*3+2, c)},
	}}
}

// requireShardEqual checks names, layers, types, shapes and bytes.
func requireShardEqual(t testing.TB, want, got Shard) {
	t.Helper()
	require.Len(t, got.Tensors, len(want.Tensors))
	for i := range want.Tensors {
		w, g := want.Tensors[i], got.Tensors[i]
		require.Equal(t, w.Name, g.Name)
		require.Equal(t, w.Layer, g.Layer, w.Name)
		require.Equal(t, w.DType, g.DType, w.Name)
		require.Equal(t, w.Shape, g.Shape, w.Name)
		require.True(t, bytes.Equal(w.Data, g.Data), "bytes of %s differ", w.Name)
	}
}

// smallOptions are options sized for unit tests: 64 KiB chunks, little staging.
func smallOptions(dir string, log zerolog.Logger) Options {
	return Options{Dir: dir, MaxInFlight: 2, Writers: 2, ChunkSize: 64 << 10, StagingBytes: 1 << 20,
		KeepCommitted: 2, DirectIO: true, Logger: log}
}

// openEngine opens an engine and closes it at the end of the test.
func openEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	e, err := Open(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// plan1 is a single-rank plan.
var plan1 = PlanInfo{World: 1, PP: 1, DP: 1, TP: 1}

// saveWait saves and waits for the commit.
func saveWait(t testing.TB, e *Engine, step int64, shard Shard, plan PlanInfo) ShardMeta {
	t.Helper()
	ctx := context.Background()
	p, err := e.Save(ctx, SaveRequest{Step: step, Shard: shard, Plan: plan})
	require.NoError(t, err)
	m, err := p.Wait(ctx)
	require.NoError(t, err)
	return m
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	wait.For(t, 20*time.Second, time.Millisecond, cond, "%s", what)
}

// slotOf returns the data path of the committed slot holding step.
func slotOf(t testing.TB, e *Engine, step int64) string {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.committedLocked() {
		if s.m.Step == step {
			return s.dataPath
		}
	}
	t.Fatalf("step %d is not committed", step)
	return ""
}
