package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/schooner-ml/schooner/activities/trainingact"
	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/devserver"
	"github.com/schooner-ml/schooner/taskqueue"
	trainsim "github.com/schooner-ml/schooner/trainer/sim"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers"
)

// testTimeScale compresses simulated time so a job of a few hundred simulated minutes runs in
// seconds; boot and notice times shrink with it.
const testTimeScale = 120

// trainingEnv is the whole training stack of `schooner demo` in one test: an embedded server
// on a fixed port (so it can be restarted under the same clients), the simulated market on
// the bundled traces, the control worker with the training activities and the simulated
// node agents.
type trainingEnv struct {
	t       *testing.T
	dir     string
	port    int
	log     zerolog.Logger
	server  *devserver.Server
	client  client.Client
	market  *sim.Market
	control worker.Worker
	agents  *workers.SimAgents
	store   string
	stopRun context.CancelFunc
}

func startTraining(t *testing.T) *trainingEnv {
	t.Helper()
	te := &trainingEnv{t: t, dir: t.TempDir(), log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)}
	var err error
	te.port, err = devserver.FreePort("127.0.0.1")
	require.NoError(t, err)
	te.startServer()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	te.client, err = workers.Dial(ctx, workers.ClientConfig{Address: te.server.Address(), Namespace: te.server.Namespace()},
		workers.NewTemporalLogger(te.log), nil)
	require.NoError(t, err)
	require.NoError(t, workers.EnsureSearchAttributes(ctx, te.client, te.server.Namespace()))

	cfg := sim.Config{Seed: 3, TimeScale: testTimeScale}
	require.NoError(t, cfg.UseBundledTraces())
	te.market, err = sim.New(cfg)
	require.NoError(t, err)
	runCtx, stopRun := context.WithCancel(context.Background())
	te.stopRun = stopRun
	go func() { _ = te.market.Run(runCtx) }()
	te.store = (&url.URL{Scheme: "file", Path: filepath.Join(te.dir, "store")}).String()

	te.startControl()
	te.agents, err = workers.StartSimAgents(context.Background(), te.client,
		workers.SimNodesOptions{Market: te.market, TimeScale: testTimeScale, DataDir: t.TempDir(), Logger: te.log})
	require.NoError(t, err)
	t.Cleanup(te.stop)
	return te
}

func (te *trainingEnv) startServer() {
	srv, err := devserver.Start(devserver.Options{Port: te.port, Headless: true, DataDir: filepath.Join(te.dir, "temporal"), Logger: te.log, ServerLogLevel: "error"})
	require.NoError(te.t, err)
	te.server = srv
}

// restartServer stops the embedded server and starts it again on the same port and data
// directory; every client reconnects by itself.
func (te *trainingEnv) restartServer() {
	te.server.Stop()
	te.startServer()
}

func (te *trainingEnv) startControl() {
	te.control = workers.NewControlWorkerWith(te.client, workers.ControlOptions{
		Training: &trainingact.Control{Provider: te.market, Verify: trainsim.VerifyStep},
	})
	require.NoError(te.t, te.control.Start())
}

func (te *trainingEnv) stop() {
	te.agents.Stop()
	if te.control != nil {
		te.control.Stop()
	}
	te.stopRun()
	te.client.Close()
	te.server.Stop()
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
	_, err := te.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: taskqueue.Control},
		training.WorkflowTrainingJob, training.JobInput{
			Spec: spec, TimeScale: testTimeScale, SubmittedAt: time.Now().UTC(),
			Options: training.JobOptions{HeartbeatTimeout: 3 * time.Second, PollInterval: time.Second, RetryWait: time.Second},
		})
	require.NoError(te.t, err)
}

// status queries the job; a failed query (a worker or the server restarting) is a zero status.
func (te *trainingEnv) status(ctx context.Context, id string) training.JobStatus {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var st training.JobStatus
	if v, err := te.client.QueryWorkflow(qctx, id, "", training.QueryStatus); err == nil {
		_ = v.Get(&st)
	}
	return st
}

// waitIteration polls until the job has done at least n iterations.
func (te *trainingEnv) waitIteration(ctx context.Context, id string, n int64, within time.Duration) training.JobStatus {
	te.t.Helper()
	var st training.JobStatus
	eventually(te.t, within, func() bool {
		st = te.status(ctx, id)
		return st.Phase == training.PhaseTraining && st.Iteration >= n
	}, fmt.Sprintf("job %s at iteration %d", id, n))
	return st
}

// waitClosed polls until the job's workflow has closed and returns its last status.
func (te *trainingEnv) waitClosed(ctx context.Context, id string, within time.Duration) training.JobStatus {
	te.t.Helper()
	closed := func() bool {
		d, err := te.client.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return false
		}
		s := d.GetWorkflowExecutionInfo().GetStatus()
		return s != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && s != enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW
	}
	deadline := time.Now().Add(within)
	for !closed() {
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(te.status(ctx, id), "", "  ")
			te.t.Fatalf("timed out after %s waiting for job %s to close; its status:\n%s", within, id, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var st training.JobStatus
	if err := te.client.GetWorkflow(ctx, id, "").Get(ctx, &st); err != nil {
		st = te.status(ctx, id)
	}
	return st
}

// requireNoLeak asserts the provider runs no instance tagged with the job.
func (te *trainingEnv) requireNoLeak(ctx context.Context, id string) {
	te.t.Helper()
	live, err := te.market.List(ctx, map[string]string{cloud.JobTag: id})
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
	s, err := store.Open(ctx, spec.Checkpoint.Store)
	require.NoError(te.t, err)
	require.NoError(te.t, trainsim.VerifyStep(ctx, &checkpoint.Remote{Store: s}, spec.Iterations, spec.Trainer.Seed, layers))
}

// runningInstance returns one running instance of the job.
func (te *trainingEnv) runningInstance(ctx context.Context, id string) cloud.Instance {
	te.t.Helper()
	var inst cloud.Instance
	eventually(te.t, 20*time.Second, func() bool {
		live, err := te.market.List(ctx, map[string]string{cloud.JobTag: id})
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
