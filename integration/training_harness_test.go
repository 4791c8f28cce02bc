package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/devserver/stack"
	trainsim "github.com/schooner-ml/schooner/trainer/sim"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers/trainingclient"
)

// testTimeScale compresses simulated time so a job of a few hundred simulated minutes runs in
// seconds; boot and notice times shrink with it.
const testTimeScale = 120

// trainingEnv is the whole training stack of `schooner demo` in one test (package stack:
// the embedded server, the simulated market on the bundled traces, the control worker with
// the training activities and the simulated node agents) and a checkpoint store.
type trainingEnv struct {
	*stack.Stack
	t     *testing.T
	store string
}

func startTraining(t *testing.T) *trainingEnv {
	t.Helper()
	dir := t.TempDir()
	return &trainingEnv{
		Stack: startStack(t, stack.Options{DataDir: dir, Headless: true, Logger: testLogger(t), Seed: 3, TimeScale: testTimeScale}),
		t:     t,
		store: (&url.URL{Scheme: "file", Path: filepath.Join(dir, "store")}).String(),
	}
}

// spec is a small demo-shaped job: OPT-350 on spot V100s in the traced zones.
func (te *trainingEnv) spec(name string, iterations int64) training.Spec {
	return training.Spec{
		Name: name, Model: training.Model{Name: "OPT-350"}, GlobalBatch: 32, Iterations: iterations,
		Resources:  training.Resources{Clouds: []string{"aws"}, Zones: []string{"us-east-2b", "us-west-2a", "us-west-2c"}, GPUTypes: []string{"V100-16"}, MaxGPUs: 4},
		Spot:       training.SpotWithFallback,
		Checkpoint: training.Checkpoint{Every: 10, Store: te.store},
		Trainer:    training.Trainer{Kind: training.TrainerSim, Seed: 11},
	}.WithDefaults()
}

// submit starts a job with short timeouts, so lost machines are noticed quickly.
func (te *trainingEnv) submit(ctx context.Context, id string, spec training.Spec) {
	te.t.Helper()
	require.NoError(te.t, spec.Validate())
	_, err := te.Jobs.Submit(ctx, spec, trainingclient.SubmitOptions{ID: id,
		Options: training.JobOptions{HeartbeatTimeout: 3 * time.Second, PollInterval: time.Second, RetryWait: time.Second}})
	require.NoError(te.t, err)
}

// waitIteration polls until the job has done at least n iterations; a failed query (a
// worker or the server restarting) is polled again.
func (te *trainingEnv) waitIteration(ctx context.Context, id string, n int64, within time.Duration) training.JobStatus {
	te.t.Helper()
	var st training.JobStatus
	eventually(te.t, within, func() bool {
		var err error
		st, err = te.Jobs.Status(ctx, id)
		return err == nil && st.Phase == training.PhaseTraining && st.Iteration >= n
	}, fmt.Sprintf("job %s at iteration %d", id, n))
	return st
}

// waitClosed waits until the job's workflow has closed and returns its final status.
func (te *trainingEnv) waitClosed(ctx context.Context, id string, within time.Duration) training.JobStatus {
	te.t.Helper()
	wctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	st, err := te.Jobs.Wait(wctx, id, 100*time.Millisecond)
	if err != nil {
		last, _ := te.Jobs.Status(ctx, id)
		b, _ := json.MarshalIndent(last, "", "  ")
		te.t.Fatalf("job %s did not close within %s (%v); its status:\n%s", id, within, err, b)
	}
	return st
}

// requireEnded asserts the job's workflow ended in state and the provider runs no instance
// tagged with the job.
func (te *trainingEnv) requireEnded(ctx context.Context, id string, state enumspb.WorkflowExecutionStatus) {
	te.t.Helper()
	got, err := te.Jobs.State(ctx, id)
	require.NoError(te.t, err)
	require.Equal(te.t, state, got)
	te.requireNoLeak(ctx, id)
}

// requireNoLeak asserts the provider runs no instance tagged with the job.
func (te *trainingEnv) requireNoLeak(ctx context.Context, id string) {
	te.t.Helper()
	live, err := te.Market.List(ctx, map[string]string{cloud.JobTag: id})
	require.NoError(te.t, err)
	require.Empty(te.t, live, "instances still running for %s", id)
}

// requireVerified checks the job completed and its final durable step equals an
// uninterrupted run, independently of what the job itself reported.
func (te *trainingEnv) requireVerified(ctx context.Context, spec training.Spec, st training.JobStatus) {
	te.t.Helper()
	require.Equal(te.t, training.PhaseCompleted, st.Phase, "job error: %s", st.Error)
	require.Equal(te.t, spec.Iterations, st.Iteration)
	require.True(te.t, st.StateVerified, "the job's own verification: %s", st.VerifyError)
	require.NotEmpty(te.t, st.Plans)
	stages := st.Plans[len(st.Plans)-1].Plan.Stages
	layers := stages[len(stages)-1].LastLayer + 1
	require.NotEmpty(te.t, st.CheckpointStore, "the job names its checkpoint namespace")
	s, err := store.Open(ctx, st.CheckpointStore)
	require.NoError(te.t, err)
	require.NoError(te.t, trainsim.VerifyStep(ctx, &checkpoint.Remote{Store: s}, spec.Iterations, spec.Trainer.Seed, layers))
}

// runningInstance returns one running instance of the job.
func (te *trainingEnv) runningInstance(ctx context.Context, id string) cloud.Instance {
	te.t.Helper()
	var inst cloud.Instance
	eventually(te.t, 20*time.Second, func() bool {
		live, err := te.Market.List(ctx, map[string]string{cloud.JobTag: id})
		if err != nil {
			return false
		}
		for _, i := range live {
			if i.State == cloud.StateRunning {
				inst = i
				return true
			}
		}
		return false
	}, "a running instance of "+id)
	return inst
}
