package workers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/activities/trainingact"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/internal/wait"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers/workerstest"
)

// fakeStarter records the nodes SimNodes starts and stops, in place of Temporal workers.
type fakeStarter struct {
	mu      sync.Mutex
	started map[string]*trainingact.Trainer
	stopped map[string]bool
}

func (f *fakeStarter) start(id string, t *trainingact.Trainer) (func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = os.MkdirAll(t.DataDir, 0o755) // what the node's trainers would write
	f.started[id] = t
	return func() {
		f.mu.Lock()
		f.stopped[id] = true
		f.mu.Unlock()
	}, nil
}

func (f *fakeStarter) isStopped(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stopped[id]
}

const (
	simZone = "us-west-2a"
	simType = "p3.2xlarge"
)

func simMarket(t *testing.T) *sim.Market {
	t.Helper()
	m, err := sim.New(sim.Config{Seed: 1, TimeScale: 60, Zones: []string{simZone}, InstanceTypes: []string{simType},
		Capacity: map[sim.Key]sim.Capacity{{Zone: simZone, InstanceType: simType}: sim.Constant(8)},
		Price:    sim.PriceModel{Fixed: true}})
	require.NoError(t, err)
	return m
}

func launch(t *testing.T, m *sim.Market, job string, n int) []string {
	t.Helper()
	got, err := m.Create(context.Background(), cloud.CreateRequest{JobID: job, Zone: simZone, InstanceType: simType, Capacity: cloud.Spot, Count: n})
	require.NoError(t, err)
	return cloud.IDs(got)
}

func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	wait.For(t, 10*time.Second, 5*time.Millisecond, cond, "%s", what)
}

func newTestSimNodes(t *testing.T, m *sim.Market) (*SimNodes, *fakeStarter, *workerstest.NoticeRecorder) {
	t.Helper()
	f := &fakeStarter{started: map[string]*trainingact.Trainer{}, stopped: map[string]bool{}}
	rec := workerstest.NewNoticeRecorder()
	s, err := NewSimNodes(nil, SimNodesOptions{Market: m, DataDir: t.TempDir(), Reporter: rec,
		StartNode: f.start, Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	return s, f, rec
}

func TestSimNodesFollowTheMarket(t *testing.T) {
	m := simMarket(t)
	s, f, rec := newTestSimNodes(t, m)
	ctx := context.Background()
	ids := launch(t, m, "train-a-1", 3)
	s.Poll(ctx)
	require.Empty(t, s.Nodes(), "pending instances have no node agent yet")

	m.Advance(time.Hour)
	s.Poll(ctx)
	require.ElementsMatch(t, ids, s.Nodes())
	tr := f.started[ids[0]]
	require.Equal(t, ids[0], tr.NodeID)
	require.Equal(t, filepath.Join(s.o.DataDir, "nodes", ids[0]), tr.DataDir)

	// A notice reaches the job with the deadline in wall time (2 simulated minutes at 60x).
	before := time.Now()
	require.NoError(t, m.Preempt(ids[0], 2*time.Minute))
	s.Poll(ctx)
	eventually(t, func() bool { return len(rec.Of("train-a-1")) == 1 }, "the job hears the notice")
	n := rec.Of("train-a-1")[0]
	require.Equal(t, training.PreemptionNotice{InstanceID: ids[0], Kind: cloud.Notice, Deadline: n.Deadline}, n)
	require.True(t, n.Deadline.After(before) && n.Deadline.Before(before.Add(time.Minute)), "deadline %s is wall time", n.Deadline)

	// The preemption kills the node and deletes its files.
	m.Advance(2 * time.Minute)
	s.Poll(ctx)
	eventually(t, func() bool { return f.isStopped(ids[0]) }, "the preempted node stops")
	eventually(t, func() bool { _, err := os.Stat(tr.DataDir); return os.IsNotExist(err) }, "the dead node's files go")
	require.ElementsMatch(t, ids[1:], s.Nodes())

	// A node agent can die with no notice and no change at the provider.
	require.NoError(t, s.KillNode(ids[1]))
	eventually(t, func() bool { return f.isStopped(ids[1]) }, "the killed node stops")
	require.Error(t, s.KillNode(ids[1]))
	live, err := m.List(ctx, map[string]string{cloud.JobTag: "train-a-1"})
	require.NoError(t, err)
	require.Len(t, live, 2, "killing the agent leaves the instance running")

	// Termination kills the last one; Stop leaves nothing.
	require.NoError(t, m.Terminate(ctx, []string{ids[2]}))
	s.Poll(ctx)
	eventually(t, func() bool { return f.isStopped(ids[2]) }, "the terminated node stops")
	require.Empty(t, s.Nodes())
}

func TestSimNodesSkipInstancesGoneInTheSameBatch(t *testing.T) {
	m := simMarket(t)
	s, f, _ := newTestSimNodes(t, m)
	ids := launch(t, m, "train-b-1", 1)
	m.Advance(time.Hour)
	require.NoError(t, m.Preempt(ids[0], 0))
	s.Poll(context.Background())
	require.Empty(t, s.Nodes())
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Empty(t, f.started)
}

func TestSimNodesStartAndStop(t *testing.T) {
	m := simMarket(t)
	before := runtime.NumGoroutine()
	s, f, _ := newTestSimNodes(t, m)
	ids := launch(t, m, "train-c-1", 2)
	m.Advance(time.Hour)
	s.Start(context.Background())
	eventually(t, func() bool { return len(s.Nodes()) == 2 }, "both nodes boot")
	s.Stop()
	require.Empty(t, s.Nodes())
	for _, id := range ids {
		require.True(t, f.isStopped(id))
	}
	eventually(t, func() bool { return runtime.NumGoroutine() <= before }, "SimNodes leaves no goroutine behind")
}

// Every goroutine a simulated node brings (here its stand-in worker's) ends when its
// instance ends, while SimNodes goes on following the market: a dev server that ran
// thousands of instances holds nothing of the dead ones.
func TestSimNodesLeaveNothingOfEndedInstances(t *testing.T) {
	m := simMarket(t)
	f := &fakeStarter{started: map[string]*trainingact.Trainer{}, stopped: map[string]bool{}}
	var workers sync.WaitGroup
	start := func(id string, tr *trainingact.Trainer) (func(), error) {
		stopFake, _ := f.start(id, tr)
		done := make(chan struct{})
		workers.Go(func() { <-done }) // what a node's Temporal worker runs until stopped
		return func() { close(done); stopFake() }, nil
	}
	rec := workerstest.NewNoticeRecorder()
	s, err := NewSimNodes(nil, SimNodesOptions{Market: m, DataDir: t.TempDir(), Reporter: rec, StartNode: start,
		PollInterval: 5 * time.Millisecond, Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	require.NoError(t, err)
	s.Start(context.Background())
	t.Cleanup(s.Stop)
	idle := runtime.NumGoroutine()

	for round := range 5 {
		ids := launch(t, m, fmt.Sprintf("train-d-%d", round), 8)
		m.Advance(time.Hour)
		eventually(t, func() bool { return len(s.Nodes()) == 8 }, "the nodes boot")
		require.Greater(t, runtime.NumGoroutine(), idle)
		if round%2 == 0 {
			require.NoError(t, m.Terminate(context.Background(), ids))
		} else {
			for _, id := range ids {
				require.NoError(t, m.Preempt(id, 0))
			}
			m.Advance(time.Second)
		}
		eventually(t, func() bool { return len(s.Nodes()) == 0 }, "the nodes die with their instances")
		eventually(t, func() bool { return runtime.NumGoroutine() <= idle }, "the dead nodes' goroutines end")
	}
}
