package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/training"
)

// jobIterations is the size of the integration jobs: long enough to inject faults in the
// middle, short enough to finish in seconds at testTimeScale.
const jobIterations = 200

// TestTrainingJobCompletes runs a demo-shaped job through an injected preemption with a
// notice and one without (its zone drained, so the replan goes elsewhere): it completes,
// its final state equals an uninterrupted run, and nothing leaks. Its histories are the
// committed replay fixtures.
func TestTrainingJobCompletes(t *testing.T) {
	te := startTraining(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	spec := te.spec("complete", jobIterations)
	id := "train-complete-test01"
	te.submit(ctx, id, spec)

	te.waitIteration(ctx, id, jobIterations/4, 30*time.Second)
	first := te.runningInstance(ctx, id)
	require.NoError(t, te.Market.PreemptWithNotice(first.ID))
	te.waitIteration(ctx, id, jobIterations/2, 30*time.Second)
	second := te.runningInstance(ctx, id)
	require.NoError(t, te.Market.Preempt(second.ID, 0))
	_, err := te.Market.Drain(second.Zone)
	require.NoError(t, err)

	st := te.waitClosed(ctx, id, 45*time.Second)
	te.requireVerified(ctx, spec, st)
	te.requireNoLeak(ctx, id)
	assert.GreaterOrEqual(t, st.Preemptions, 2)
	assert.GreaterOrEqual(t, st.Replans, 2)
	assert.GreaterOrEqual(t, st.Restores, 1)
	assert.Greater(t, st.CheckpointsCommitted, 0)

	recordHistory(t, te.Client, id, "training_job.json")
	if fleet := firstChild(ctx, t, te, id); fleet != "" {
		recordHistory(t, te.Client, fleet, "fleet.json")
	}
}

// TestTrainingJobWithADeadlineFollowsThePolicy runs the demo-shaped job with a deadline too
// short for spot alone at the market's start, through a preemption: the deadline policy
// (the code `schooner policy eval` simulates) decides what it holds, through the real
// DecideSpot activity and planner, and the job completes verified with nothing leaked. Its
// history is the replay fixture of the policy's path.
func TestTrainingJobWithADeadlineFollowsThePolicy(t *testing.T) {
	te := startTraining(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	spec := te.spec("deadline", jobIterations)
	spec.Deadline = "40m"
	id := "train-deadline-test01"
	te.submit(ctx, id, spec)

	te.waitIteration(ctx, id, jobIterations/3, 30*time.Second)
	require.NoError(t, te.Market.PreemptWithNotice(te.runningInstance(ctx, id).ID))

	st := te.waitClosed(ctx, id, 45*time.Second)
	te.requireVerified(ctx, spec, st)
	te.requireNoLeak(ctx, id)
	assert.GreaterOrEqual(t, st.Preemptions, 1)
	t.Logf("cost $%.2f, %d plans, on-demand purchases %+v", st.CostUSD, len(st.Plans), st.OnDemandPurchases)
	for _, p := range st.OnDemandPurchases {
		assert.NotEmpty(t, p.Why, "every on-demand purchase says why")
	}
	recordHistory(t, te.Client, id, "training_job_deadline.json")
}

// TestTrainingJobCancelReleases cancels a job mid-way: every instance is released.
func TestTrainingJobCancelReleases(t *testing.T) {
	te := startTraining(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id := "train-cancel-test01"
	te.submit(ctx, id, te.spec("cancel", jobIterations))
	te.waitIteration(ctx, id, jobIterations/4, 30*time.Second)
	st, err := te.Jobs.Cancel(ctx, id, 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, training.PhaseCancelled, st.Phase)
	te.requireEnded(ctx, id, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED)
}

// TestTrainingJobFailureReleases gives a job a total budget it exhausts: it fails and
// releases every instance.
func TestTrainingJobFailureReleases(t *testing.T) {
	te := startTraining(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id := "train-budget-test01"
	spec := te.spec("budget", 100000)
	spec.Checkpoint.Every = 1000
	spec.Budget.TotalUSD = 0.5
	te.submit(ctx, id, spec)
	st := te.waitClosed(ctx, id, 50*time.Second)
	assert.Equal(t, training.PhaseFailed, st.Phase)
	te.requireEnded(ctx, id, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED)
}

// TestTrainingJobSurvivesControlWorkerRestart kills the control worker mid-job and starts a
// new one: the job goes on from its history and completes verified.
func TestTrainingJobSurvivesControlWorkerRestart(t *testing.T) {
	te := startTraining(t)
	te.runThroughFault("worker", "train-worker-test01", 45*time.Second, func(context.Context, string) {
		require.NoError(t, te.RestartControl())
	})
}

// TestTrainingJobSurvivesServerRestart restarts the embedded server on the same data
// directory mid-job: workers reconnect, the job completes verified.
func TestTrainingJobSurvivesServerRestart(t *testing.T) {
	te := startTraining(t)
	te.runThroughFault("server", "train-server-test01", 50*time.Second, func(context.Context, string) {
		require.NoError(t, te.RestartServer())
	})
}

// TestTrainingJobNodeDiesWithoutNotice kills one node agent (its machine stays up as far as
// the provider knows... until the job confirms): the heartbeat timeout catches it, the
// provider is asked, and the job completes verified.
func TestTrainingJobNodeDiesWithoutNotice(t *testing.T) {
	te := startTraining(t)
	st := te.runThroughFault("nodekill", "train-nodekill-test01", 50*time.Second, func(ctx context.Context, id string) {
		victim := te.runningInstance(ctx, id)
		require.NoError(t, te.Agents.Nodes.KillNode(victim.ID))
	})
	assert.GreaterOrEqual(t, st.Replans, 1, "the lost node's rank was replanned")
}

// runThroughFault submits a job of jobIterations, applies fault once a third of it is done,
// and requires the job to close within closeWithin, verified and with nothing leaked.
func (te *trainingEnv) runThroughFault(name, id string, closeWithin time.Duration, fault func(ctx context.Context, id string)) training.JobStatus {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	spec := te.spec(name, jobIterations)
	te.submit(ctx, id, spec)
	te.waitIteration(ctx, id, jobIterations/3, 30*time.Second)
	fault(ctx, id)
	st := te.waitClosed(ctx, id, closeWithin)
	te.requireVerified(ctx, spec, st)
	te.requireNoLeak(ctx, id)
	return st
}

// firstChild finds the first Fleet child the job started, from its history.
func firstChild(ctx context.Context, t *testing.T, te *trainingEnv, id string) string {
	iter := te.Client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		if a := ev.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil && a.GetWorkflowType().GetName() == fleet.WorkflowFleet {
			return a.GetWorkflowId()
		}
	}
	return ""
}
