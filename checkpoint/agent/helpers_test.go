package agent

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/internal/wait"
)

// rig is an agent serving on a socket in a short temporary directory (socket paths are limited
// to about 100 bytes, and test names are long).
type rig struct {
	a    *Agent
	opts Options
	sock string
	done chan error
}

// testOptions are small engine settings so tests move megabytes, not gigabytes.
func testOptions(t *testing.T) Options {
	return Options{
		Dir:          t.TempDir(),
		ShmDir:       t.TempDir(),
		Writers:      2,
		ChunkSize:    256 << 10,
		StagingBytes: 1 << 20,
		Logger:       zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel),
	}
}

func startAgent(t *testing.T, opts Options) *rig {
	t.Helper()
	return startAgentWith(t, opts, func(*wiring) {})
}

// startAgentWith is startAgent with some dependencies replaced.
func startAgentWith(t *testing.T, opts Options, change func(*wiring)) *rig {
	t.Helper()
	w := defaultWiring()
	change(&w)
	a, err := newAgent(opts, w)
	require.NoError(t, err)
	sock := shortSock(t)
	l, err := Listen(sock)
	require.NoError(t, err)
	r := &rig{a: a, opts: opts, sock: sock, done: make(chan error, 1)}
	go func() { r.done <- a.Serve(l) }()
	t.Cleanup(r.stop)
	return r
}

// stop closes the agent and waits for Serve to return.
func (r *rig) stop() {
	_ = r.a.Close()
	<-r.done
	r.done <- nil // a second stop returns at once
}

// shortSock is a socket path in a fresh shortDir.
func shortSock(t *testing.T) string {
	t.Helper()
	return filepath.Join(shortDir(t), "agent.sock")
}

func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "sck")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// dial connects a client for rank and says hello.
func (r *rig) dial(t *testing.T, rank int, plan checkpoint.PlanInfo) *Client {
	t.Helper()
	c, err := Dial(context.Background(), r.sock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Hello(context.Background(), rank, plan)
	require.NoError(t, err)
	return c
}

// testShard is rank's deterministic shard of step: a weight and a bias for layer rank, and a
// counter of no layer, about size bytes in all. Names carry the rank so shards of different
// ranks merge without clashing.
func testShard(rank int, step int64, size int) checkpoint.Shard {
	rng := rand.New(rand.NewPCG(uint64(rank)+1, uint64(step)+1))
	fill := func(n int) []byte {
		b := make([]byte, n)
		for i := 0; i+8 <= n; i += 8 {
			binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
		}
		return b
	}
	w := max(size/4/4*4, 4) // F32 elements of the weight, a multiple of 4
	counter := make([]byte, 8)
	binary.LittleEndian.PutUint64(counter, uint64(step))
	return checkpoint.Shard{Rank: rank, Tensors: []checkpoint.Tensor{
		{Name: fmt.Sprintf("layers.%d.weight", rank), Layer: rank, DType: checkpoint.Float32, Shape: []int64{4, int64(w / 4)}, Data: fill(w * 4)},
		{Name: fmt.Sprintf("layers.%d.bias", rank), Layer: rank, DType: checkpoint.BFloat16, Shape: []int64{3}, Data: fill(6)},
		{Name: fmt.Sprintf("rank%d.step", rank), Layer: checkpoint.NoLayer, DType: checkpoint.Int64, Shape: nil, Data: counter},
	}}
}

// requireTensors checks that got holds exactly want's tensors, byte for byte.
func requireTensors(t *testing.T, want, got []checkpoint.Tensor) {
	t.Helper()
	byName := map[string]checkpoint.Tensor{}
	for _, g := range got {
		byName[g.Name] = g
	}
	require.Len(t, got, len(want))
	for _, w := range want {
		g, ok := byName[w.Name]
		require.True(t, ok, "tensor %s missing", w.Name)
		require.Equal(t, w.Layer, g.Layer, w.Name)
		require.Equal(t, w.DType, g.DType, w.Name)
		require.Equal(t, len(w.Shape), len(g.Shape), w.Name)
		require.True(t, bytes.Equal(w.Data, g.Data), "tensor %s differs", w.Name)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, cond func() bool, what string, args ...any) {
	t.Helper()
	wait.For(t, within, 5*time.Millisecond, cond, what, args...)
}

func plan1() checkpoint.PlanInfo { return checkpoint.PlanInfo{World: 1, PP: 1, DP: 1, TP: 1} }

// tempFiles lists the temp files of a directory store.
func tempFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(e.Name(), ".schooner-tmp-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func shmFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, shmPrefix+"*"))
	var out []string
	for _, f := range m {
		if !strings.Contains(f, "-"+strconvI(int64(os.Getpid()))+"-") {
			out = append(out, f)
		}
	}
	return out
}
