package sim

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/agent"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/training"
)

// node is one simulated machine of a test: a real checkpoint agent on a Unix socket, with its
// own local directory, uploading to the job's shared store.
type node struct {
	a    *agent.Agent
	sock string
	done chan error
}

func testLogger(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

// startNode starts an agent over st; kill (or the test's end) closes it without flushing
// uploads, like a machine that vanished.
func startNode(t *testing.T, st store.Store) *node {
	t.Helper()
	a, err := agent.New(agent.Options{
		Dir: t.TempDir(), ShmDir: t.TempDir(), Store: st, Retain: -1,
		Writers: 2, ChunkSize: 64 << 10, StagingBytes: 1 << 20, Logger: testLogger(t),
	})
	require.NoError(t, err)
	d, err := os.MkdirTemp("", "simt")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	n := &node{a: a, sock: filepath.Join(d, "a.sock"), done: make(chan error, 1)}
	l, err := agent.Listen(n.sock)
	require.NoError(t, err)
	go func() { n.done <- a.Serve(l) }()
	t.Cleanup(n.kill)
	return n
}

func (n *node) kill() {
	_ = n.a.Close()
	if err, ok := <-n.done; ok {
		_ = err
		close(n.done)
	}
}

// layout is a plan shape: its stages' layer ranges and its data-parallel degree.
type layout struct {
	stages []checkpoint.StageLayers
	dp     int
}

// assignments lays a job of the given shape out as one assignment per trainer.
func (l layout) assignments(job string, epoch int, layers int, iters, every int64, restore int64) []training.Assignment {
	plan := checkpoint.PlanInfo{World: len(l.stages), PP: len(l.stages), DP: l.dp, TP: 1, Stages: l.stages}
	var out []training.Assignment
	for s, sl := range l.stages {
		for r := range l.dp {
			out = append(out, training.Assignment{
				JobID: job, Epoch: epoch, InstanceID: "i", Rank: s*l.dp + r, Stage: s, Replica: r,
				Layers: sl, Plan: plan, Model: "sim", ModelLayers: layers, Seed: 42,
				RestoreStep: restore, Iterations: iters, IterSeconds: 0.001, TimeScale: 1,
				CheckpointEvery: every, Saver: r == 0,
			})
		}
	}
	return out
}

// epochResult is what one epoch's trainers did.
type epochResult struct {
	results   []training.TrainerResult
	errs      []error
	committed []training.CheckpointCommitted
}

// runEpoch runs every assignment, each on its own node; with cutAt >= 0 the epoch is
// cancelled once any trainer reaches that iteration, and the nodes are killed.
func runEpoch(t *testing.T, st store.Store, as []training.Assignment, cutAt int64) epochResult {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	res := epochResult{results: make([]training.TrainerResult, len(as)), errs: make([]error, len(as))}
	var wg sync.WaitGroup
	nodes := make([]*node, len(as))
	for i, a := range as {
		nodes[i] = startNode(t, st)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res.results[i], res.errs[i] = Run(ctx, RunOptions{
				Assignment: a, Dial: DialSocket(nodes[i].sock), Store: st, Logger: testLogger(t),
				OnProgress: func(p training.Progress) {
					if cutAt >= 0 && p.Iteration >= cutAt {
						cancel()
					}
				},
				OnCommitted: func(c training.CheckpointCommitted) {
					mu.Lock()
					res.committed = append(res.committed, c)
					mu.Unlock()
				},
			})
		}()
	}
	wg.Wait()
	for _, n := range nodes {
		n.kill()
	}
	return res
}

// latestDurable is the newest durable step in the store, -1 for none.
func latestDurable(t *testing.T, st store.Store) int64 {
	t.Helper()
	steps, err := (&checkpoint.Remote{Store: st}).DurableSteps(context.Background())
	require.NoError(t, err)
	if len(steps) == 0 {
		return -1
	}
	return steps[0]
}
