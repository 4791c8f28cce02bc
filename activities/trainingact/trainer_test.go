package trainingact

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
	trainsim "github.com/schooner-ml/schooner/trainer/sim"
	"github.com/schooner-ml/schooner/training"
)

// recorder is a JobReporter that keeps what it is told.
type recorder struct {
	mu        sync.Mutex
	progress  []training.Progress
	committed []training.CheckpointCommitted
	notices   []training.PreemptionNotice
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

func (r *recorder) Notice(_ context.Context, _ string, n training.PreemptionNotice) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notices = append(r.notices, n)
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

func newTrainer(t *testing.T, rep JobReporter) *Trainer {
	return &Trainer{NodeID: "i-1", DataDir: t.TempDir(), ShmDir: t.TempDir(), Reporter: rep,
		HeartbeatEvery: 20 * time.Millisecond, ProgressEvery: 20 * time.Millisecond,
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)}
}

func TestRunTrainerTrainsToADurableVerifiedEnd(t *testing.T) {
	root := t.TempDir()
	rec := &recorder{}
	tr := newTrainer(t, rec)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(tr.RunTrainer)
	var beats int
	var mu sync.Mutex
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, _ converter.EncodedValues) { mu.Lock(); beats++; mu.Unlock() })

	val, err := env.ExecuteActivity(tr.RunTrainer, oneStage("file://"+root, 3, 30))
	require.NoError(t, err)
	var res training.TrainerResult
	require.NoError(t, val.Get(&res))
	require.Equal(t, training.TrainerResult{Rank: 0, FinalIteration: 30, LastCheckpoint: 30}, res)
	require.Contains(t, rec.steps(), int64(30), "the final step is signalled")
	mu.Lock()
	require.Positive(t, beats)
	mu.Unlock()
	rec.mu.Lock()
	last := rec.progress[len(rec.progress)-1]
	rec.mu.Unlock()
	require.Equal(t, int64(30), last.Iteration)
	require.Equal(t, int64(30), last.LastCheckpoint)

	dir, err := store.NewDir(root)
	require.NoError(t, err)
	require.NoError(t, trainsim.VerifyStep(context.Background(), &checkpoint.Remote{Store: dir}, 30, 7, 3))
	require.Empty(t, tr.Running())
}

// TestRunTrainerRestoresAndTakesEmergencyCheckpoint restores a second epoch from the first's
// durable step and checks that a notice to the node makes the saver checkpoint at once.
func TestRunTrainerRestoresAndTakesEmergencyCheckpoint(t *testing.T) {
	root := t.TempDir()
	var s testsuite.WorkflowTestSuite
	first := newTrainer(t, &recorder{})
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(first.RunTrainer)
	_, err := env.ExecuteActivity(first.RunTrainer, oneStage("file://"+root, 2, 10))
	require.NoError(t, err)

	rec := &recorder{}
	tr := newTrainer(t, rec)
	noticed := false
	rec.onProg = func(p training.Progress) {
		if p.Iteration >= 13 && !noticed {
			noticed = true
			require.Equal(t, []string{"train-t-1"}, tr.Notice(time.Now().Add(time.Minute)))
		}
	}
	a := oneStage("file://"+root, 2, 40)
	a.Epoch, a.RestoreStep, a.CheckpointEvery, a.IterSeconds = 2, 10, 100, 0.005
	env2 := s.NewTestActivityEnvironment()
	env2.RegisterActivity(tr.RunTrainer)
	_, err = env2.ExecuteActivity(tr.RunTrainer, a)
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

// TestKilledNodeAnswersNothing kills the node mid-run: RunTrainer must return at once with no
// result (as a vanished machine), and the node refuses further work.
func TestKilledNodeAnswersNothing(t *testing.T) {
	root := t.TempDir()
	rec := &recorder{}
	tr := newTrainer(t, rec)
	rec.onProg = func(p training.Progress) {
		if p.Iteration >= 5 {
			tr.Kill()
		}
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(tr.RunTrainer)
	a := oneStage("file://"+root, 2, 100000)
	done := make(chan error, 1)
	go func() {
		_, err := env.ExecuteActivity(tr.RunTrainer, a)
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorContains(t, err, activity.ErrResultPending.Error())
	case <-time.After(20 * time.Second):
		t.Fatal("RunTrainer did not stop after Kill")
	}
	_, err := env.ExecuteActivity(tr.RunTrainer, a)
	require.ErrorContains(t, err, "was killed")
}

func TestRunTrainerRejectsBadAssignments(t *testing.T) {
	tr := newTrainer(t, nil)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(tr.RunTrainer)
	a := oneStage("file://"+t.TempDir(), 2, 10)
	a.Stage = 3
	_, err := env.ExecuteActivity(tr.RunTrainer, a)
	require.ErrorContains(t, err, "not in a plan")
	a = oneStage("", 2, 10)
	_, err = env.ExecuteActivity(tr.RunTrainer, a)
	require.ErrorContains(t, err, "no checkpoint store")
}

// TestStopTrainersStopsOnlyOlderEpochsOfTheJob runs two trainers of a job's epoch 1 on one
// node and asks it to stop those before epoch 2: both RunTrainers return TrainerStopped at
// once; a request for another job or for epochs before 1 stops nothing.
func TestStopTrainersStopsOnlyOlderEpochsOfTheJob(t *testing.T) {
	root := t.TempDir()
	started := make(chan struct{}, 2)
	rec := &recorder{}
	tr := newTrainer(t, rec)
	var once [2]sync.Once
	rec.onProg = func(p training.Progress) {
		if p.Iteration >= 3 {
			once[p.Rank].Do(func() { started <- struct{}{} })
		}
	}
	var s testsuite.WorkflowTestSuite
	done := make(chan error, 2)
	for rank := range 2 {
		env := s.NewTestActivityEnvironment()
		env.RegisterActivity(tr.RunTrainer)
		a := oneStage("file://"+filepath.Join(root, strconv.Itoa(rank)), 2, 1_000_000)
		a.Rank = rank
		go func() {
			_, err := env.ExecuteActivity(tr.RunTrainer, a)
			done <- err
		}()
	}
	for range 2 {
		select {
		case <-started:
		case <-time.After(20 * time.Second):
			t.Fatal("trainers did not start")
		}
	}
	n, err := tr.StopTrainers(context.Background(), training.StopRequest{JobID: "train-other", BeforeEpoch: 9})
	require.NoError(t, err)
	require.Zero(t, n, "another job's request stops nothing")
	n, err = tr.StopTrainers(context.Background(), training.StopRequest{JobID: "train-t-1", BeforeEpoch: 1})
	require.NoError(t, err)
	require.Zero(t, n, "epoch 1 is not before epoch 1")
	require.Len(t, tr.Running(), 2)

	n, err = tr.StopTrainers(context.Background(), training.StopRequest{JobID: "train-t-1", BeforeEpoch: 2})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for range 2 {
		select {
		case err := <-done:
			var app *temporal.ApplicationError
			require.ErrorAs(t, err, &app)
			require.Equal(t, ErrTypeTrainerStopped, app.Type())
		case <-time.After(10 * time.Second):
			t.Fatal("RunTrainer did not return after StopTrainers")
		}
	}
	require.Empty(t, tr.Running())
}
