package node

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/internal/wait"
	trainsim "github.com/schooner-ml/schooner/trainer/sim"
	"github.com/schooner-ml/schooner/training"
)

// recorder is a Reporter that keeps what it is told.
type recorder struct {
	mu        sync.Mutex
	progress  []training.Progress
	committed []training.CheckpointCommitted
	onProg    func(training.Progress)
}

func (r *recorder) Progress(_ context.Context, _ string, p training.Progress) error {
	r.mu.Lock()
	r.progress = append(r.progress, p)
	f := r.onProg
	r.mu.Unlock()
	if f != nil {
		f(p)
	}
	return nil
}

func (r *recorder) Committed(_ context.Context, _ string, c training.CheckpointCommitted) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.committed = append(r.committed, c)
	return nil
}

func (r *recorder) steps() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int64
	for _, c := range r.committed {
		out = append(out, c.Step)
	}
	return out
}

// oneStage is a single-stage simulated job of layers layers on the store at url.
func oneStage(url string, layers int, iters int64) training.Assignment {
	return training.Assignment{
		JobID: "train-t-1", Epoch: 1, InstanceID: "i-1", Rank: 0, Stage: 0, Replica: 0,
		Layers: checkpoint.StageLayers{First: 0, End: layers},
		Plan:   checkpoint.PlanInfo{World: 1, PP: 1, DP: 1, TP: 1, Stages: []checkpoint.StageLayers{{First: 0, End: layers}}},
		Model:  "sim", ModelLayers: layers, Seed: 7, RestoreStep: -1, Iterations: iters,
		IterSeconds: 0.002, TimeScale: 1, CheckpointEvery: 5, Store: url, Saver: true,
		Trainer: training.Trainer{Kind: training.TrainerSim, Seed: 7},
	}
}

func newSupervisor(t *testing.T, rep Reporter) *Supervisor {
	return &Supervisor{NodeID: "i-1", DataDir: t.TempDir(), ShmDir: t.TempDir(), Reporter: rep,
		HeartbeatEvery: 20 * time.Millisecond, ProgressEvery: 20 * time.Millisecond,
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)}
}

func TestRunTrainsToADurableVerifiedEnd(t *testing.T) {
	root := t.TempDir()
	rec := &recorder{}
	s := newSupervisor(t, rec)
	var beats atomic.Int64
	res, err := s.Run(context.Background(), oneStage("file://"+root, 3, 30), func(training.Progress) { beats.Add(1) })
	require.NoError(t, err)
	require.Equal(t, training.TrainerResult{Rank: 0, FinalIteration: 30, LastCheckpoint: 30}, res)
	require.Contains(t, rec.steps(), int64(30), "the final step is signalled")
	require.Positive(t, beats.Load())
	rec.mu.Lock()
	last := rec.progress[len(rec.progress)-1]
	rec.mu.Unlock()
	require.Equal(t, int64(30), last.Iteration)
	require.Equal(t, int64(30), last.LastCheckpoint)

	dir, err := store.NewDir(root)
	require.NoError(t, err)
	require.NoError(t, trainsim.VerifyStep(context.Background(), &checkpoint.Remote{Store: dir}, 30, 7, 3))
	require.Empty(t, s.Running())
}

// TestRunRestoresAndTakesEmergencyCheckpoint restores a second epoch from the first's durable
// step and checks that a notice to the node makes the saver checkpoint at once.
func TestRunRestoresAndTakesEmergencyCheckpoint(t *testing.T) {
	root := t.TempDir()
	_, err := newSupervisor(t, &recorder{}).Run(context.Background(), oneStage("file://"+root, 2, 10), nil)
	require.NoError(t, err)

	rec := &recorder{}
	s := newSupervisor(t, rec)
	noticed := false
	rec.onProg = func(p training.Progress) {
		if p.Iteration >= 13 && !noticed {
			noticed = true
			require.Equal(t, []string{"train-t-1"}, s.Notice(time.Now().Add(time.Minute)))
		}
	}
	a := oneStage("file://"+root, 2, 40)
	a.Epoch, a.RestoreStep, a.CheckpointEvery, a.IterSeconds = 2, 10, 100, 0.005
	_, err = s.Run(context.Background(), a, nil)
	require.NoError(t, err)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.True(t, noticed)
	require.GreaterOrEqual(t, len(rec.committed), 2)
	em := rec.committed[0]
	require.True(t, em.Emergency, "the first commit after the notice is the emergency step: %+v", rec.committed)
	require.Greater(t, em.Step, int64(10))
	require.Less(t, em.Step, int64(40))
	require.Equal(t, int64(40), rec.committed[len(rec.committed)-1].Step)
}

// TestKilledNodeAnswersNothing kills the node mid-run: Run must return ErrVanished at once (a
// vanished machine), and the node refuses further work.
func TestKilledNodeAnswersNothing(t *testing.T) {
	root := t.TempDir()
	rec := &recorder{}
	s := newSupervisor(t, rec)
	rec.onProg = func(p training.Progress) {
		if p.Iteration >= 5 {
			s.Kill()
		}
	}
	a := oneStage("file://"+root, 2, 100000)
	done := make(chan error, 1)
	go func() {
		_, err := s.Run(context.Background(), a, nil)
		done <- err
	}()
	require.ErrorIs(t, wait.Recv(t, done, 20*time.Second, "Run to stop after Kill"), ErrVanished)
	_, err := s.Run(context.Background(), a, nil)
	require.ErrorContains(t, err, "was killed")
	require.NotErrorIs(t, err, ErrVanished, "a call after Kill fails; it is not a vanished run")
}

func TestRunRejectsBadAssignments(t *testing.T) {
	s := newSupervisor(t, nil)
	a := oneStage("file://"+t.TempDir(), 2, 10)
	a.Stage = 3
	_, err := s.Run(context.Background(), a, nil)
	require.ErrorIs(t, err, ErrBadAssignment)
	require.ErrorContains(t, err, "not in a plan")
	a = oneStage("", 2, 10)
	_, err = s.Run(context.Background(), a, nil)
	require.ErrorIs(t, err, ErrBadAssignment)
	require.ErrorContains(t, err, "no checkpoint store")
	a = oneStage("file://"+t.TempDir(), 2, 10)
	a.Trainer.Kind = "jax"
	_, err = s.Run(context.Background(), a, nil)
	require.ErrorIs(t, err, ErrBadAssignment)
	require.ErrorContains(t, err, `unknown trainer kind "jax"`)
}

// TestStopStopsOnlyOlderEpochsOfTheJob runs two trainers of a job's epoch 1 on one node and
// asks it to stop those before epoch 2: both Runs return ErrStopped at once; a request for
// another job or for epochs before 1 stops nothing.
func TestStopStopsOnlyOlderEpochsOfTheJob(t *testing.T) {
	root := t.TempDir()
	started := make(chan struct{}, 2)
	rec := &recorder{}
	s := newSupervisor(t, rec)
	var once [2]sync.Once
	rec.onProg = func(p training.Progress) {
		if p.Iteration >= 3 {
			once[p.Rank].Do(func() { started <- struct{}{} })
		}
	}
	done := make(chan error, 2)
	for rank := range 2 {
		a := oneStage("file://"+filepath.Join(root, strconv.Itoa(rank)), 2, 1_000_000)
		a.Rank = rank
		go func() {
			_, err := s.Run(context.Background(), a, nil)
			done <- err
		}()
	}
	for range 2 {
		wait.Recv(t, started, 20*time.Second, "the trainers to start")
	}
	require.Zero(t, s.Stop(training.StopRequest{JobID: "train-other", BeforeEpoch: 9}), "another job's request stops nothing")
	require.Zero(t, s.Stop(training.StopRequest{JobID: "train-t-1", BeforeEpoch: 1}), "epoch 1 is not before epoch 1")
	require.Len(t, s.Running(), 2)

	require.Equal(t, 2, s.Stop(training.StopRequest{JobID: "train-t-1", BeforeEpoch: 2}))
	for range 2 {
		err := wait.Recv(t, done, 10*time.Second, "Run to return after Stop")
		require.ErrorIs(t, err, ErrStopped)
		require.ErrorContains(t, err, "stopped by its job for a newer epoch")
	}
	require.Empty(t, s.Running())
}

// TestStoresOutsideTheAllowedRootsAreRefused: checkpoint.store: file:///etc wrote checkpoints
// into /etc and let retention delete there.
func TestStoresOutsideTheAllowedRootsAreRefused(t *testing.T) {
	outside := t.TempDir()
	s := newSupervisor(t, &recorder{})
	s.StoreRoots = []string{s.DataDir}
	for _, url := range []string{"file:///etc/schooner-probe", "file://" + s.DataDir + "/../x", "file://" + outside + "/store"} {
		_, err := s.Run(context.Background(), oneStage(url, 2, 10), nil)
		require.ErrorIs(t, err, ErrBadAssignment, url)
		require.Contains(t, err.Error(), url)
	}
	require.NoDirExists(t, filepath.Join(outside, "store"))
	require.NoDirExists(t, "/etc/schooner-probe")
}
