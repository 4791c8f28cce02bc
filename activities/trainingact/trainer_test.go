package trainingact

import (
	"context"
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
	"github.com/schooner-ml/schooner/internal/wait"
	"github.com/schooner-ml/schooner/trainer/node"
	"github.com/schooner-ml/schooner/training"
)

// These tests cover what the activity adds to trainer/node's Supervisor (whose own tests cover
// training, restore, notices and stopping): Temporal heartbeats and the errors Temporal sees.

// oneStage is a single-stage simulated job of layers layers on the store at url.
func oneStage(url string, layers int, iters int64) training.Assignment {
	return training.Assignment{
		JobID: "train-t-1", Epoch: 1, InstanceID: "i-1", Layers: checkpoint.StageLayers{End: layers},
		Plan:  checkpoint.PlanInfo{World: 1, PP: 1, DP: 1, TP: 1, Stages: []checkpoint.StageLayers{{End: layers}}},
		Model: "sim", ModelLayers: layers, Seed: 7, RestoreStep: -1, Iterations: iters,
		IterSeconds: 0.002, TimeScale: 1, CheckpointEvery: 5, Store: url, Saver: true,
		Trainer: training.Trainer{Kind: training.TrainerSim, Seed: 7},
	}
}

func newTrainer(t *testing.T) *Trainer {
	return &Trainer{Supervisor: &node.Supervisor{NodeID: "i-1", DataDir: t.TempDir(), ShmDir: t.TempDir(),
		HeartbeatEvery: 20 * time.Millisecond, ProgressEvery: 20 * time.Millisecond,
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)}}
}

// runAsync runs RunTrainer in its own activity environment and returns its error when done.
func runAsync(tr *Trainer, a training.Assignment) <-chan error {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(tr.RunTrainer)
	done := make(chan error, 1)
	go func() {
		_, err := env.ExecuteActivity(tr.RunTrainer, a)
		done <- err
	}()
	return done
}

// waitRunning waits until n trainers run on the node.
func waitRunning(t *testing.T, tr *Trainer, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(tr.Running()) == n }, 20*time.Second, 5*time.Millisecond)
}

func TestRunTrainerHeartbeatsAndReturnsTheResult(t *testing.T) {
	tr := newTrainer(t)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(tr.RunTrainer)
	var beats int
	var mu sync.Mutex
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, _ converter.EncodedValues) { mu.Lock(); beats++; mu.Unlock() })

	val, err := env.ExecuteActivity(tr.RunTrainer, oneStage("file://"+t.TempDir(), 3, 30))
	require.NoError(t, err)
	var res training.TrainerResult
	require.NoError(t, val.Get(&res))
	require.Equal(t, training.TrainerResult{Rank: 0, FinalIteration: 30, LastCheckpoint: 30}, res)
	mu.Lock()
	require.Positive(t, beats)
	mu.Unlock()
	require.Empty(t, tr.Running())
}

// TestKilledNodeAnswersNothing kills the node mid-run: RunTrainer must return at once with no
// result (as a vanished machine), and the node refuses further work.
func TestKilledNodeAnswersNothing(t *testing.T) {
	tr := newTrainer(t)
	a := oneStage("file://"+t.TempDir(), 2, 100000)
	done := runAsync(tr, a)
	waitRunning(t, tr, 1)
	tr.Kill()
	require.ErrorContains(t, wait.Recv(t, done, 20*time.Second, "RunTrainer to stop after Kill"), activity.ErrResultPending.Error())
	require.ErrorContains(t, <-runAsync(tr, a), "was killed")
}

func TestRunTrainerRejectsBadAssignments(t *testing.T) {
	tr := newTrainer(t)
	a := oneStage("file://"+t.TempDir(), 2, 10)
	a.Stage = 3
	err := <-runAsync(tr, a)
	require.ErrorContains(t, err, "not in a plan")
	requireAppError(t, err, ErrTypeBadAssignment)
	err = <-runAsync(tr, oneStage("", 2, 10))
	require.ErrorContains(t, err, "no checkpoint store")
	requireAppError(t, err, ErrTypeBadAssignment)
}

// TestStopTrainersStopsOnlyOlderEpochsOfTheJob asks the node to stop a job's trainers before
// epoch 2: its epoch-1 RunTrainer returns a non-retryable TrainerStopped error at once; a
// request for another job stops nothing.
func TestStopTrainersStopsOnlyOlderEpochsOfTheJob(t *testing.T) {
	tr := newTrainer(t)
	done := runAsync(tr, oneStage("file://"+t.TempDir(), 2, 1_000_000))
	waitRunning(t, tr, 1)
	n, err := tr.StopTrainers(context.Background(), training.StopRequest{JobID: "train-other", BeforeEpoch: 9})
	require.NoError(t, err)
	require.Zero(t, n, "another job's request stops nothing")
	n, err = tr.StopTrainers(context.Background(), training.StopRequest{JobID: "train-t-1", BeforeEpoch: 2})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	requireAppError(t, wait.Recv(t, done, 10*time.Second, "RunTrainer to return after StopTrainers"), ErrTypeTrainerStopped)
	require.Empty(t, tr.Running())
}

// requireAppError checks that err is a non-retryable Temporal application error of type typ.
func requireAppError(t *testing.T, err error, typ string) {
	t.Helper()
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, typ, app.Type())
	require.True(t, app.NonRetryable())
}
