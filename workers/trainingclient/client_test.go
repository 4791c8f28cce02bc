package trainingclient

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/training"
)

const (
	running   = enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	completed = enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	failed    = enumspb.WORKFLOW_EXECUTION_STATUS_FAILED
)

func TestNewJobID(t *testing.T) {
	id := NewJobID("demo")
	assert.Regexp(t, regexp.MustCompile(`^train-demo-[a-z0-9]{6}$`), id)
	assert.NotEqual(t, id, NewJobID("demo"))
}

func TestSubmitStartsATrainingJobNamedByItsID(t *testing.T) {
	f := &fakeTemporal{}
	c := New(f)
	spec := training.Spec{Name: "demo", Iterations: 600, Model: training.Model{Name: "OPT-350"}}
	id, err := c.Submit(context.Background(), spec, SubmitOptions{})
	require.NoError(t, err)
	assert.Regexp(t, `^train-demo-[a-z0-9]{6}$`, id)
	require.Len(t, f.started, 1)
	assert.Equal(t, id, f.started[0].ID, "the workflow id is the job id")
	assert.Equal(t, taskqueue.Control, f.started[0].TaskQueue)
	assert.Equal(t, "train demo: 600 iterations of OPT-350", f.started[0].StaticSummary)
	assert.Zero(t, f.inputs[0].TimeScale, "the job asks its cloud; the client sends none")
	assert.False(t, f.inputs[0].SubmittedAt.IsZero())

	opts := training.JobOptions{HeartbeatTimeout: 3 * time.Second}
	id, err = c.Submit(context.Background(), spec, SubmitOptions{ID: "train-fixed", Options: opts})
	require.NoError(t, err)
	assert.Equal(t, "train-fixed", id)
	assert.Equal(t, opts, f.inputs[1].Options)

	assert.Len(t, f.started, 2)
}

func TestModelNameWithoutAName(t *testing.T) {
	assert.Equal(t, "a 24-layer model (hidden 1024)", ModelName(training.Model{Layers: 24, Hidden: 1024}))
}

func TestStatusQueriesTheJob(t *testing.T) {
	f := &fakeTemporal{states: []enumspb.WorkflowExecutionStatus{running}, answers: []training.JobStatus{{JobID: "j", Phase: training.PhaseTraining, Iteration: 7}}}
	st, err := New(f).Status(context.Background(), "j")
	require.NoError(t, err)
	assert.Equal(t, int64(7), st.Iteration)
}

func TestStatusOfAClosedJobFallsBackToItsResult(t *testing.T) {
	f := &fakeTemporal{states: []enumspb.WorkflowExecutionStatus{completed}, queryErr: errors.New("no worker"),
		result: training.JobStatus{JobID: "j", Phase: training.PhaseCompleted}}
	st, err := New(f).Status(context.Background(), "j")
	require.NoError(t, err)
	assert.Equal(t, training.PhaseCompleted, st.Phase)
}

func TestAFailedQueryIsAnErrorNeverAZeroStatus(t *testing.T) {
	for name, f := range map[string]*fakeTemporal{
		"running":              {states: []enumspb.WorkflowExecutionStatus{running}, queryErr: errors.New("worker restarting")},
		"closed with an error": {states: []enumspb.WorkflowExecutionStatus{failed}, queryErr: errors.New("no worker"), resultErr: errors.New("budget exhausted")},
		"not found":            {queryErr: errors.New("not found")},
	} {
		t.Run(name, func(t *testing.T) {
			st, err := New(f).Status(context.Background(), "j")
			require.Error(t, err)
			assert.Contains(t, err.Error(), "querying status of j")
			assert.Equal(t, training.JobStatus{}, st)
		})
	}
}

func TestWatchShowsEveryReadingUntilClosed(t *testing.T) {
	f := &fakeTemporal{
		states: []enumspb.WorkflowExecutionStatus{running, running, completed},
		answers: []training.JobStatus{
			{JobID: "j", Phase: training.PhaseTraining, Iteration: 1},
			{JobID: "j", Phase: training.PhaseTraining, Iteration: 2},
			{JobID: "j", Phase: training.PhaseCompleted, Iteration: 3},
		},
	}
	var seen []int64
	st, err := New(f).Watch(context.Background(), "j", time.Millisecond, func(st training.JobStatus, err error) {
		require.NoError(t, err)
		seen = append(seen, st.Iteration)
	})
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 2, 3}, seen)
	assert.Equal(t, training.PhaseCompleted, st.Phase)
}

func TestWatchRetriesAFailedQueryWhileTheJobRuns(t *testing.T) {
	// Each failed query describes the job once more to learn whether it closed.
	f := &fakeTemporal{states: []enumspb.WorkflowExecutionStatus{running, running, running, running, completed}, queryErr: errors.New("worker restarting"),
		result: training.JobStatus{JobID: "j", Phase: training.PhaseCompleted}}
	errs := 0
	st, err := New(f).Watch(context.Background(), "j", time.Millisecond, func(_ training.JobStatus, err error) {
		if err != nil {
			errs++
		}
	})
	require.NoError(t, err, "the closed job answers with its result")
	assert.Equal(t, 2, errs, "both failures while running were shown and retried")
	assert.Equal(t, training.PhaseCompleted, st.Phase)
}

func TestWatchEndsWithTheContext(t *testing.T) {
	f := &fakeTemporal{states: []enumspb.WorkflowExecutionStatus{running}, answers: []training.JobStatus{{JobID: "j"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := New(f).Wait(ctx, "j", time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestCancelWaitsUntilClosed(t *testing.T) {
	f := &fakeTemporal{states: []enumspb.WorkflowExecutionStatus{running, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED},
		queryErr: errors.New("no worker"), resultErr: errors.New("canceled")}
	_, err := New(f).Cancel(context.Background(), "j", 5*time.Second)
	require.Error(t, err, "no worker and no published status: an error, never a zero status ($0.00, 0 instances)")
	assert.Contains(t, err.Error(), "cannot be read")
	assert.Equal(t, []string{"j"}, f.cancelled)

	final := training.JobStatus{JobID: "j", Phase: training.PhaseCancelled, CostUSD: 176.4, Instances: []string{"i-1"}}
	f = &fakeTemporal{states: []enumspb.WorkflowExecutionStatus{running, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED},
		queryErr: errors.New("no worker"), resultErr: errors.New("canceled"), memo: &final}
	st, err := New(f).Cancel(context.Background(), "j", 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 176.4, st.CostUSD, "the cost the job published, not zero")
	assert.True(t, st.Stale, "and marked as the last published status")

	f = &fakeTemporal{states: []enumspb.WorkflowExecutionStatus{running}}
	_, err = New(f).Cancel(context.Background(), "j", 50*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestListDecodesSearchAttributes(t *testing.T) {
	attr := func(v any) *commonpb.Payload {
		p, err := converter.GetDefaultDataConverter().ToPayload(v)
		require.NoError(t, err)
		return p
	}
	started := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	exec := func(id string, sa map[string]*commonpb.Payload) *workflowpb.WorkflowExecutionInfo {
		return &workflowpb.WorkflowExecutionInfo{
			Execution: &commonpb.WorkflowExecution{WorkflowId: id}, Status: running, StartTime: timestamppb.New(started),
			SearchAttributes: &commonpb.SearchAttributes{IndexedFields: sa},
		}
	}
	f := &fakeTemporal{pages: []*workflowservice.ListWorkflowExecutionsResponse{
		{Executions: []*workflowpb.WorkflowExecutionInfo{exec("a", map[string]*commonpb.Payload{
			"SchoonerPhase": attr("training"), "SchoonerCostUSD": attr(1.5), "SchoonerProgress": attr(0.25),
			"SchoonerGPUs": attr(4), "SchoonerZones": attr([]string{"us-east-2b", "us-west-2a"}),
		})}, NextPageToken: []byte("next")},
		{Executions: []*workflowpb.WorkflowExecutionInfo{exec("b", nil), exec("c", nil)}, NextPageToken: []byte("more")},
	}}
	jobs, err := New(f).List(context.Background(), ListOptions{Query: "SchoonerPhase='training'", Limit: 2})
	require.NoError(t, err)
	assert.Equal(t, []string{"WorkflowType='TrainingJob' AND (SchoonerPhase='training')", "WorkflowType='TrainingJob' AND (SchoonerPhase='training')"}, f.listed)
	require.Len(t, jobs, 2, "the limit holds across pages")
	assert.Equal(t, JobSummary{ID: "a", Status: "running", Phase: "training", Progress: 0.25, CostUSD: 1.5, GPUs: 4,
		Zones: []string{"us-east-2b", "us-west-2a"}, Started: started}, jobs[0])
	assert.Equal(t, JobSummary{ID: "b", Status: "running", Started: started}, jobs[1], "a job without attributes is still listed")
}

func TestStatusOfABusyControlPlaneIsTheLastPublishedOneMarkedStale(t *testing.T) {
	pub := training.JobStatus{JobID: "j", Phase: training.PhaseTraining, Iteration: 40, CostUSD: 3.5}
	f := &fakeTemporal{states: []enumspb.WorkflowExecutionStatus{running}, queryErr: context.DeadlineExceeded, memo: &pub}
	st, err := New(f).Status(context.Background(), "j")
	require.NoError(t, err)
	assert.True(t, st.Stale)
	assert.Equal(t, int64(40), st.Iteration)
	assert.Equal(t, training.PhaseTraining, st.Phase)

	f = &fakeTemporal{states: []enumspb.WorkflowExecutionStatus{running}, queryErr: context.DeadlineExceeded}
	_, err = New(f).Status(context.Background(), "j")
	require.Error(t, err, "nothing published: an error, not a zero status")
}
