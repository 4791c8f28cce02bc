package checkpoint

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// crashChildEnv switches TestCrashChild on and names its engine directory.
const crashChildEnv = "SCHOONER_CRASH_CHILD_DIR"

// crashRunsPerDir is how many crash/recover cycles share one directory, so recovery of a
// directory that already went through crashes is exercised too.
const crashRunsPerDir = 5

// crashOptions is the engine configuration of the crash test: small chunks so every checkpoint
// has many, three in flight, two writers.
func crashOptions(dir string) Options {
	return Options{Dir: dir, MaxInFlight: 3, Writers: 2, ChunkSize: 256 << 10, StagingBytes: 8 << 20,
		KeepCommitted: 2, DirectIO: true, Logger: zerolog.Nop()}
}

// crashShard is the deterministic shard of step: 0.5–6 MB, bytes a function of the step.
func crashShard(step int64) Shard {
	const lo, span = 512 << 10, 5<<20 + 512<<10
	size := lo + int((uint64(step)*2654435761)%span)
	return testShard(step, size)
}

// TestCrashChild is the process TestCrashConsistency kills: it resumes from the directory's
// latest checkpoint and saves one step after another, printing "ACK <step>" once each commit is
// durable, until it is killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("only run as a child of TestCrashConsistency")
	}
	e, err := Open(crashOptions(dir))
	require.NoError(t, err)
	next := int64(1)
	if m, ok := e.Latest(); ok {
		next = m.Step + 1
	}
	fmt.Printf("READY %d\n", next)
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second) // never outlive a parent that died
	for step := next; time.Now().Before(deadline); step++ {
		p, err := e.Save(ctx, SaveRequest{Step: step, Shard: crashShard(step), Plan: plan1})
		require.NoError(t, err)
		go func() {
			if _, err := p.Wait(ctx); err == nil {
				fmt.Printf("ACK %d\n", p.Step())
			}
		}()
	}
}

// crashRun is what the parent saw of one child.
type crashRun struct {
	start  int64 // first step the child saved
	maxAck int64 // highest acknowledged step, -1 if none
	stderr string
}

// runCrashChild starts a child on dir, kills it with SIGKILL delay after it is ready, and
// returns what it acknowledged.
func runCrashChild(dir string, delay time.Duration) (crashRun, error) {
	run := crashRun{maxAck: -1}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return run, err
	}
	if err := cmd.Start(); err != nil {
		return run, fmt.Errorf("starting child: %w", err)
	}
	ready := make(chan struct{})
	var mu sync.Mutex
	scanned := make(chan struct{})
	var other strings.Builder // what the child printed besides its protocol (a failed test)
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 2 || (f[0] != "READY" && f[0] != "ACK") {
				mu.Lock()
				other.WriteString(sc.Text() + "\n")
				mu.Unlock()
				continue
			}
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				continue
			}
			mu.Lock()
			switch f[0] {
			case "READY":
				run.start = n
				close(ready)
			case "ACK":
				run.maxAck = max(run.maxAck, n)
			}
			mu.Unlock()
		}
	}()
	select {
	case <-ready:
	case <-scanned:
		_ = cmd.Wait()
		mu.Lock()
		defer mu.Unlock()
		return run, fmt.Errorf("child exited before it was ready: %s%s", stderr.String(), other.String())
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return run, fmt.Errorf("child never became ready: %s", stderr.String())
	}
	killAt := time.After(delay)
	select {
	case <-killAt:
	case <-scanned:
		_ = cmd.Wait()
		return run, fmt.Errorf("child exited on its own: %s", stderr.String())
	}
	_ = cmd.Process.Kill() // SIGKILL: no deferred code, no Close, nothing flushed
	<-scanned
	_ = cmd.Wait()
	mu.Lock()
	defer mu.Unlock()
	run.stderr = stderr.String()
	return run, nil
}

// checkAfterCrash recovers dir and checks the crash-consistency promise: if anything was
// acknowledged, the restored checkpoint is intact, byte for byte what was saved, and at least as
// new as the last acknowledgement (and the previous recovery); every other committed fallback is
// intact too. It returns the restored step (-1 for none).
func checkAfterCrash(dir string, run crashRun, prev int64) (int64, error) {
	e, err := Open(crashOptions(dir))
	if err != nil {
		return -1, fmt.Errorf("reopening: %w", err)
	}
	defer e.Close()
	shard, m, err := e.Restore(context.Background())
	if errors.Is(err, ErrNoCheckpoint) {
		if run.maxAck >= 0 || prev >= 0 {
			return -1, fmt.Errorf("no checkpoint after step %d was acknowledged (previous recovery: %d)", run.maxAck, prev)
		}
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("restoring: %w", err)
	}
	if m.Step < run.maxAck || m.Step < prev {
		return -1, fmt.Errorf("restored step %d, but step %d was acknowledged (previous recovery: %d)", m.Step, run.maxAck, prev)
	}
	if err := sameShard(crashShard(m.Step), shard); err != nil {
		return -1, fmt.Errorf("restored step %d: %w", m.Step, err)
	}
	for _, c := range e.Committed() {
		got, _, err := e.Read(context.Background(), c.Step)
		if err != nil {
			return -1, fmt.Errorf("committed fallback step %d: %w", c.Step, err)
		}
		if err := sameShard(crashShard(c.Step), got); err != nil {
			return -1, fmt.Errorf("committed fallback step %d: %w", c.Step, err)
		}
	}
	return m.Step, nil
}

// sameShard compares two shards without testing.T (it runs on worker goroutines).
func sameShard(want, got Shard) error {
	if len(want.Tensors) != len(got.Tensors) {
		return fmt.Errorf("%d tensors, want %d", len(got.Tensors), len(want.Tensors))
	}
	for i, w := range want.Tensors {
		g := got.Tensors[i]
		if w.Name != g.Name || w.DType != g.DType || !bytes.Equal(w.Data, g.Data) {
			return fmt.Errorf("tensor %d (%s) differs", i, w.Name)
		}
	}
	return nil
}

func TestCrashConsistency(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		t.Skip("inside a crash child")
	}
	if testing.Short() {
		t.Skip("spawns hundreds of processes")
	}
	runs := 200
	if s := os.Getenv("SCHOONER_CRASH_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "SCHOONER_CRASH_RUNS")
		runs = n
	}
	seed := int64(20261201)
	if s := os.Getenv("SCHOONER_CRASH_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, "SCHOONER_CRASH_SEED")
		seed = n
	}
	rng := rand.New(rand.NewSource(seed))
	type lineage struct {
		dir    string
		delays []time.Duration
	}
	var lineages []lineage
	for i := 0; i < runs; i += crashRunsPerDir {
		l := lineage{dir: t.TempDir()}
		for j := i; j < min(runs, i+crashRunsPerDir); j++ {
			d := time.Duration(rng.Int63n(int64(150 * time.Millisecond)))
			if rng.Intn(20) == 0 {
				d = 0 // right away: before the first commit
			}
			l.delays = append(l.delays, d)
		}
		lineages = append(lineages, l)
	}

	var (
		mu       sync.Mutex
		failures []string
		acked    int
		noCkpt   int
	)
	work := make(chan lineage)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range work {
				prev := int64(-1)
				for i, d := range l.delays {
					run, err := runCrashChild(l.dir, d)
					if err == nil {
						prev, err = checkAfterCrash(l.dir, run, prev)
					}
					mu.Lock()
					if err != nil {
						failures = append(failures, fmt.Sprintf("%s run %d (kill after %v, acked %d): %v %s",
							l.dir, i, d, run.maxAck, err, run.stderr))
					}
					if run.maxAck >= 0 {
						acked++
					}
					if prev < 0 {
						noCkpt++
					}
					mu.Unlock()
					if err != nil {
						break
					}
				}
			}
		}()
	}
	for _, l := range lineages {
		work <- l
	}
	close(work)
	wg.Wait()
	t.Logf("seed %d: %d runs, %d acknowledged at least one step, %d recovered to no checkpoint", seed, runs, acked, noCkpt)
	require.Empty(t, failures)
}
