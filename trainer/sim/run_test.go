package sim

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/training"
)

func TestExpectedLayerIsDeterministicAndMoves(t *testing.T) {
	a := ExpectedLayer(7, 3, 10)
	b := ExpectedLayer(7, 3, 10)
	require.Len(t, a, len(layerTensors))
	for i := range a {
		require.NoError(t, a[i].Validate())
		require.Equal(t, a[i].Data, b[i].Data)
		require.Equal(t, 3, a[i].Layer)
	}
	require.NotEqual(t, a[0].Data, ExpectedLayer(7, 3, 11)[0].Data, "an iteration changes the state")
	require.NotEqual(t, a[0].Data, ExpectedLayer(8, 3, 10)[0].Data, "the seed changes the state")
	require.NotEqual(t, a[0].Data, ExpectedLayer(7, 4, 10)[0].Data, "layers differ")
}

// TestBitExactAcrossPreemptionsAndReshapes runs a job through preemptions at random
// iterations, restoring each time under a plan of another shape (pipeline depth and
// data-parallel degree change), and checks the final checkpoint is byte for byte what an
// uninterrupted run produces.
func TestBitExactAcrossPreemptionsAndReshapes(t *testing.T) {
	const layers, iters, every = 6, 60, 5
	rng := rand.New(rand.NewPCG(1, 2))
	dir, err := store.NewDir(t.TempDir())
	require.NoError(t, err)
	shapes := []layout{
		{stages: []checkpoint.StageLayers{{First: 0, End: 3}, {First: 3, End: 6}}, dp: 1},
		{stages: []checkpoint.StageLayers{{First: 0, End: 2}, {First: 2, End: 4}, {First: 4, End: 6}}, dp: 2},
		{stages: []checkpoint.StageLayers{{First: 0, End: 1}, {First: 1, End: 6}}, dp: 1},
	}
	restore := int64(-1)
	for epoch, shape := range shapes {
		from := max(restore, 0)
		cut := from + every + 1 + rng.Int64N(12) // past at least one checkpoint
		res := runEpoch(t, dir, shape.assignments("job", epoch+1, layers, iters, every, restore), cut)
		for _, err := range res.errs {
			require.ErrorIs(t, err, context.Canceled)
		}
		next := latestDurable(t, dir)
		t.Logf("epoch %d (%d stages, dp %d): cut at %d, durable %d", epoch+1, len(shape.stages), shape.dp, cut, next)
		require.GreaterOrEqual(t, next, restore, "durable progress never goes back")
		if next >= 0 {
			require.NoError(t, VerifyStep(context.Background(), &checkpoint.Remote{Store: dir}, next, 42, layers))
		}
		restore = next
	}
	final := layout{stages: []checkpoint.StageLayers{{First: 0, End: 4}, {First: 4, End: 6}}, dp: 2}
	res := runEpoch(t, dir, final.assignments("job", len(shapes)+1, layers, iters, every, restore), -1)
	for i, err := range res.errs {
		require.NoError(t, err)
		require.Equal(t, int64(iters), res.results[i].FinalIteration)
		if i%2 == 0 {
			require.Equal(t, int64(iters), res.results[i].LastCheckpoint, "the saver returns once the final step is durable")
		}
	}
	require.Equal(t, int64(iters), latestDurable(t, dir))
	require.NoError(t, VerifyStep(context.Background(), &checkpoint.Remote{Store: dir}, iters, 42, layers))

	var sawFinal bool
	for _, c := range res.committed {
		sawFinal = sawFinal || c.Step == iters
	}
	require.True(t, sawFinal, "the final step is reported committed")
}

func TestVerifyStepNamesTheMismatchingTensor(t *testing.T) {
	dir, err := store.NewDir(t.TempDir())
	require.NoError(t, err)
	shape := layout{stages: []checkpoint.StageLayers{{First: 0, End: 2}}, dp: 1}
	res := runEpoch(t, dir, shape.assignments("job", 1, 2, 10, 5, -1), -1)
	require.NoError(t, res.errs[0])
	r := &checkpoint.Remote{Store: dir}
	require.NoError(t, VerifyStep(context.Background(), r, 10, 42, 2))
	err = VerifyStep(context.Background(), r, 10, 43, 2)
	require.ErrorContains(t, err, "tensor layers.0.attn.w differs")
	err = VerifyStep(context.Background(), r, 10, 42, 3)
	require.ErrorContains(t, err, "tensor layers.2.attn.w is missing")
}

// TestEmergencyCheckpointOnNotice checks that a notice to the agent makes the saver save at
// once, off the cadence, and report the step committed as an emergency step.
func TestEmergencyCheckpointOnNotice(t *testing.T) {
	dir, err := store.NewDir(t.TempDir())
	require.NoError(t, err)
	n := startNode(t, dir)
	a := layout{stages: []checkpoint.StageLayers{{First: 0, End: 2}}, dp: 1}.assignments("job", 1, 2, 40, 100, -1)[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	committed := make(chan training.CheckpointCommitted, 10)
	_, err = Run(ctx, RunOptions{
		Assignment: a, Dial: DialSocket(n.sock), Logger: testLogger(t),
		OnProgress: func(p training.Progress) {
			if p.Iteration == 7 {
				n.a.Notice(time.Now().Add(time.Minute))
			}
		},
		OnCommitted: func(c training.CheckpointCommitted) { committed <- c },
	})
	require.NoError(t, err)
	first := <-committed
	require.Equal(t, training.CheckpointCommitted{Epoch: 1, Rank: 0, Step: 7, Emergency: true}, first)
	require.NoError(t, VerifyStep(context.Background(), &checkpoint.Remote{Store: dir}, 40, 42, 2))
}

// TestEmergencyCheckpointsOfSeveralStagesMeet gives two stages a notice while their
// iterations differ and checks that they save a common emergency step that becomes durable
// before the next regular checkpoint.
func TestEmergencyCheckpointsOfSeveralStagesMeet(t *testing.T) {
	dir, err := store.NewDir(t.TempDir())
	require.NoError(t, err)
	as := layout{stages: []checkpoint.StageLayers{{First: 0, End: 1}, {First: 1, End: 2}}, dp: 1}.assignments("job", 1, 2, 60, 50, -1)
	as[1].IterSeconds = 0.003 // stage 1 lags behind
	nodes := []*node{startNode(t, dir), startNode(t, dir)}
	committed := make(chan training.CheckpointCommitted, 100)
	errs := make(chan error, 2)
	for i, a := range as {
		go func() {
			_, err := Run(context.Background(), RunOptions{
				Assignment: a, Dial: DialSocket(nodes[i].sock), Logger: testLogger(t),
				OnProgress: func(p training.Progress) {
					if i == 0 && p.Iteration == 12 {
						for _, n := range nodes {
							n.a.Notice(time.Now().Add(time.Minute))
						}
					}
				},
				OnCommitted: func(c training.CheckpointCommitted) { committed <- c },
			})
			errs <- err
		}()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	close(committed)
	var emergency []int64
	for c := range committed {
		if c.Emergency && c.Step < 50 {
			emergency = append(emergency, c.Step)
		}
	}
	require.NotEmpty(t, emergency, "an emergency step before the regular one at 50 became durable")
	require.Zero(t, emergency[0]%10, "emergency steps lie on the grid")
	require.NoError(t, VerifyStep(context.Background(), &checkpoint.Remote{Store: dir}, emergency[0], 42, 2))
}

// fakeClock is a clock that moves only when the trainer sleeps or the test says so.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// A busy host takes time between the trainer's sleeps; the trainer still finishes its
// iterations at the planner's pace, not that pace plus the host's overhead.
func TestSimulatedTrainerKeepsThePlannersPaceOnABusyHost(t *testing.T) {
	dir, err := store.NewDir(t.TempDir())
	require.NoError(t, err)
	n := startNode(t, dir)
	a := layout{stages: []checkpoint.StageLayers{{First: 0, End: 2}}, dp: 1}.assignments("job", 1, 2, 40, 0, -1)[0]
	a.Saver = false
	wall := iterWall(a)
	clock := &fakeClock{now: time.Unix(0, 0)}
	start := clock.Now()
	_, err = Run(context.Background(), RunOptions{
		Assignment: a, Dial: DialSocket(n.sock), Logger: testLogger(t), Now: clock.Now,
		Sleep: func(ctx context.Context, d time.Duration) error {
			clock.advance(d)
			return ctx.Err()
		},
		// The host spends 60% of an iteration's time on every report.
		OnProgress: func(training.Progress) { clock.advance(wall * 6 / 10) },
	})
	require.NoError(t, err)
	took := clock.Now().Sub(start)
	// 40 iterations at the pace, plus the report before the first and after the last
	// (every iteration sleeping its whole time took 40 × 1.6 + 0.6 iterations' time).
	require.Equal(t, 40*wall+2*(wall*6/10), took, "40 iterations of %v took %v", wall, took)

	// A host slower than the pace cannot keep it, but never sleeps on top of its overhead.
	clock = &fakeClock{now: time.Unix(0, 0)}
	_, err = Run(context.Background(), RunOptions{
		Assignment: a, Dial: DialSocket(n.sock), Logger: testLogger(t), Now: clock.Now,
		Sleep: func(ctx context.Context, d time.Duration) error {
			clock.advance(d)
			return ctx.Err()
		},
		OnProgress: func(training.Progress) { clock.advance(2 * wall) },
	})
	require.NoError(t, err)
	require.Equal(t, 41*2*wall+wall, clock.Now().Sub(time.Unix(0, 0)),
		"the host's own time (a report per iteration and one at the start) and the first iteration's sleep only")
}
