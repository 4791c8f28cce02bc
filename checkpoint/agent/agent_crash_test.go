package agent

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
)

// TestCrashConsistencyThroughTheAgent kills an agent process at random moments while a client
// saves and waits, then restores on a new agent over the same directory: what it restores must
// be byte for byte a step that was saved, and no older than the last step whose wait returned.
// SCHOONER_CRASH_RUNS sets the number of runs (200; 20 with -short), SCHOONER_CRASH_SEED the
// seed.
func TestCrashConsistencyThroughTheAgent(t *testing.T) {
	runs := 200
	if testing.Short() {
		runs = 20
	}
	if v := os.Getenv("SCHOONER_CRASH_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "SCHOONER_CRASH_RUNS")
		runs = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SCHOONER_CRASH_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "SCHOONER_CRASH_SEED")
		seed = s
	}
	t.Logf("seed %d (SCHOONER_CRASH_SEED), %d runs", seed, runs)
	rng := rand.New(rand.NewPCG(seed, 0xc4a5))

	// A SIGKILL loses no page cache, so the engine's directory can live in memory: the test is
	// about what a killed agent leaves behind, and a disk busy with other work only slows it.
	dir, shm, sockDir := memDir(t), memDir(t), shortDir(t)
	next := int64(1) // a trainer resumes after the step it restored
	restored := 0
	for run := range runs {
		sock := filepath.Join(sockDir, "a"+strconv.Itoa(run%2)+".sock")
		lastWaited, lastSent := crashRun(t, rng, dir, shm, sock, next)

		step, ok := verifyRestore(t, dir, lastWaited, lastSent)
		if ok {
			restored++
			next = step + 1
		}
		if t.Failed() {
			t.Fatalf("run %d (seed %d) failed", run, seed)
		}
	}
	t.Logf("%d of %d runs restored a step", restored, runs)
	require.Positive(t, restored, "some runs must have committed something")
}

// crashRun starts a child agent, saves from step first on until the child is killed after a
// random number of requests, and returns the last step whose wait returned (-1 for none) and
// the last step sent.
func crashRun(t *testing.T, rng *rand.Rand, dir, shm, sock string, first int64) (lastWaited, lastSent int64) {
	t.Helper()
	child := startChildAgent(t, dir, shm, sock)
	defer child.stop()

	ctx := context.Background()
	c := child.dial(ctx, t)
	defer c.Close()
	_, err := c.Hello(ctx, 0, plan1())
	require.NoError(t, err)

	lastWaited, lastSent = -1, -1
	killAt := rng.IntN(8) // requests before the kill
	jitter := time.Duration(rng.IntN(4000)) * time.Microsecond
	for i, step := 0, first; i < 40; i, step = i+1, step+1 {
		if i == killAt {
			go func() { time.Sleep(jitter); _ = child.kill() }() // jitter, not a wait: the kill lands anywhere in the next requests
		}
		lastSent = step
		if _, err := c.Save(ctx, step, testShard(0, step, crashShardSize(step)), nil, false); err != nil {
			break
		}
		if rng.IntN(2) == 0 {
			if _, err := c.Wait(ctx, step, DurableLocal); err != nil {
				break
			}
			lastWaited = step
		}
	}
	return lastWaited, lastSent
}

// verifyRestore starts a fresh in-process agent on dir and restores the newest step.
func verifyRestore(t *testing.T, dir string, lastWaited, lastSent int64) (int64, bool) {
	t.Helper()
	opts := testOptions(t)
	opts.Dir = dir
	r := startAgent(t, opts)
	defer r.stop()
	c, err := Dial(context.Background(), r.sock)
	require.NoError(t, err)
	defer c.Close()
	rank := 0
	res, err := c.Load(context.Background(), LoadRequest{Step: -1, Rank: &rank})
	if errors.Is(err, checkpoint.ErrNoCheckpoint) {
		require.Negative(t, lastWaited, "step %d was waited for, yet nothing restores", lastWaited)
		return 0, false
	}
	require.NoError(t, err)
	require.GreaterOrEqual(t, res.Step, lastWaited, "restored step older than one whose wait returned")
	require.LessOrEqual(t, res.Step, lastSent, "restored a step never sent")
	requireTensors(t, testShard(0, res.Step, crashShardSize(res.Step)).Tensors, res.Tensors)
	return res.Step, true
}

// crashShardSize is 1 to 4 MiB, a function of the step so a restored step's bytes are known.
func crashShardSize(step int64) int { return int(1+uint64(step)*2654435761%4) << 20 }

// memDir is a temporary directory in /dev/shm where there is one.
func memDir(t *testing.T) string {
	t.Helper()
	if DefaultShmDir() != "/dev/shm" {
		return t.TempDir()
	}
	d, err := os.MkdirTemp("/dev/shm", "schooner-agent-test-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}
