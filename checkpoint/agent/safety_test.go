package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
)

// shrinkingEngine truncates every client save buffer right before the engine copies from it:
// a client that shrinks its buffer after the agent checked it.
type shrinkingEngine struct {
	engine
	shmDir string
	armed  bool
}

func (e *shrinkingEngine) Save(ctx context.Context, args saveArgs) (pending, error) {
	if e.armed {
		files, _ := filepath.Glob(filepath.Join(e.shmDir, shmPrefix+"save-*"))
		for _, f := range files {
			_ = os.Truncate(f, 0)
		}
	}
	return e.engine.Save(ctx, args)
}

// TestAClientShrinkingItsBufferMidSaveFailsOnlyThatSave: before, the copy took SIGBUS and the
// agent (here: the test process) died with every rank.
func TestAClientShrinkingItsBufferMidSaveFailsOnlyThatSave(t *testing.T) {
	ctx := context.Background()
	opts := testOptions(t)
	var shrink *shrinkingEngine
	r := startAgentWith(t, opts, func(w *wiring) {
		open := w.openEngine
		w.openEngine = func(o engineOptions) (engine, error) {
			e, err := open(o)
			if err != nil {
				return nil, err
			}
			shrink = &shrinkingEngine{engine: e, shmDir: opts.ShmDir, armed: true}
			return shrink, nil
		}
	})
	c := r.dial(t, 0, plan1())
	_, err := c.Save(ctx, 1, testShard(0, 1, 2<<20), nil, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), checkpoint.ErrSourceFault.Error())

	// The agent lives on: a client with a fresh buffer saves.
	shrink.armed = false
	c2, err := Dial(ctx, r.sock)
	require.NoError(t, err)
	defer c2.Close()
	_, err = c2.Hello(ctx, 0, plan1())
	require.NoError(t, err)
	_, err = c2.Save(ctx, 2, testShard(0, 2, 2<<20), nil, false)
	require.NoError(t, err)
	_, err = c2.Wait(ctx, 2, DurableLocal)
	require.NoError(t, err)
}

// TestASymlinkedOrForeignBufferIsRefused: a schooner-ckpt-* link in the shared-memory directory
// must not make the agent read (commit, upload) the file it points to.
func TestASymlinkedOrForeignBufferIsRefused(t *testing.T) {
	ctx := context.Background()
	opts := testOptions(t)
	r := startAgent(t, opts)
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, make([]byte, 8192), 0o600))
	link := filepath.Join(opts.ShmDir, shmPrefix+"save-1-link")
	require.NoError(t, os.Symlink(secret, link))
	hard := filepath.Join(opts.ShmDir, shmPrefix+"save-1-hard")
	require.NoError(t, os.Link(secret, hard))
	fifo := filepath.Join(opts.ShmDir, shmPrefix+"save-1-fifo")
	require.NoError(t, mkfifo(fifo))

	c := r.dial(t, 0, plan1())
	for _, path := range []string{link, hard, fifo} {
		_, err := c.call(ctx, Request{Op: OpSave, Step: 1, Shm: path, Tensors: []checkpoint.TensorMeta{
			{Name: "x", Layer: checkpoint.NoLayer, DType: checkpoint.Uint8, Shape: []int64{4096}, Offset: 0, Length: 4096}}})
		require.Error(t, err, path)
		assert.Contains(t, err.Error(), path)
	}
	assert.FileExists(t, secret)
	_, err := c.Wait(ctx, 1, DurableLocal)
	require.Error(t, err, "nothing was saved")
}

// TestAFloodOfHellosReleasesEngines: every rank engine used to stay open forever, so hellos of
// new ranks ran the agent out of file descriptors; now an engine goes with its last connection,
// and the number open at once is bounded with a clear error.
func TestAFloodOfHellosReleasesEngines(t *testing.T) {
	ctx := context.Background()
	opts := testOptions(t)
	opts.MaxRanks = 3
	r := startAgent(t, opts)
	plan := checkpoint.PlanInfo{World: 100000, PP: 1, DP: 100000, TP: 1}
	before := openFDs(t)
	for rank := range 300 {
		c, err := Dial(ctx, r.sock)
		require.NoError(t, err)
		_, err = c.Hello(ctx, rank, plan)
		require.NoError(t, err, "rank %d", rank)
		_, err = c.Hello(ctx, rank, plan) // hello again on the same connection: same engine
		require.NoError(t, err)
		require.NoError(t, c.Close())
		eventually(t, 10*time.Second, func() bool { return r.a.rankCount() == 0 }, "rank %d to be released", rank)
	}
	assert.LessOrEqual(t, openFDs(t), before+8, "file descriptors leak per hello")

	var held []*Client
	for rank := range 3 {
		held = append(held, r.dial(t, rank, plan))
	}
	c, err := Dial(ctx, r.sock)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Hello(ctx, 3, plan)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "maximum")
	require.NoError(t, held[0].Close())
	eventually(t, 10*time.Second, func() bool { _, err := c.Hello(ctx, 3, plan); return err == nil }, "a released rank to make room")
}

func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(es)
}

// TestHelloReportsTheNewestStepThatVerifies: a step whose bytes rotted was reported as latest.
func TestHelloReportsTheNewestStepThatVerifies(t *testing.T) {
	ctx := context.Background()
	opts := testOptions(t)
	r := startAgent(t, opts)
	c := r.dial(t, 0, plan1())
	for step := int64(1); step <= 3; step++ {
		_, err := c.Save(ctx, step, testShard(0, step, 1<<20), nil, false)
		require.NoError(t, err)
		_, err = c.Wait(ctx, step, DurableLocal)
		require.NoError(t, err)
	}
	require.NoError(t, c.Close())
	r.stop()
	corruptNewestData(t, checkpoint.RankDir(opts.Dir, 0), 3)

	r2 := startAgent(t, opts)
	c2, err := Dial(ctx, r2.sock)
	require.NoError(t, err)
	defer c2.Close()
	latest, err := c2.Hello(ctx, 0, plan1())
	require.NoError(t, err)
	assert.Equal(t, int64(2), latest, "step 3 is corrupt")
}

// corruptNewestData flips a byte in the data of the slot whose metadata names step.
func corruptNewestData(t *testing.T, dir string, step int64) {
	t.Helper()
	metas, _ := filepath.Glob(filepath.Join(dir, "slot-*.meta"))
	for _, m := range metas {
		b, err := os.ReadFile(m)
		require.NoError(t, err)
		if !strings.Contains(string(b), `"step":`+strconvI(step)+`,`) {
			continue
		}
		data := strings.TrimSuffix(m, ".meta") + ".data"
		f, err := os.OpenFile(data, os.O_RDWR, 0)
		require.NoError(t, err)
		one := []byte{0}
		_, err = f.ReadAt(one, 100)
		require.NoError(t, err)
		one[0] ^= 0xff
		_, err = f.WriteAt(one, 100)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		return
	}
	t.Fatalf("no slot holds step %d", step)
}

// TestStartSweepsSharedMemoryOfDeadProcesses: buffers of killed clients stayed in /dev/shm.
func TestStartSweepsSharedMemoryOfDeadProcesses(t *testing.T) {
	opts := testOptions(t)
	dead := filepath.Join(opts.ShmDir, shmPrefix+"save-"+strconvI(int64(deadPID(t)))+"-0011223344556677")
	live := filepath.Join(opts.ShmDir, shmPrefix+"save-"+strconvI(int64(os.Getpid()))+"-0011223344556677")
	other := filepath.Join(opts.ShmDir, "unrelated-1")
	for _, p := range []string{dead, live, other} {
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
	}
	startAgent(t, opts)
	assert.NoFileExists(t, dead)
	assert.FileExists(t, live, "a live client's buffer is never removed")
	assert.FileExists(t, other)
}
