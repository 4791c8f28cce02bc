package jobwf

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/taskqueue"
)

// ControlCtx is the options of a control activity: on the control queue, retried with
// backoff, with a readable summary for the UI. Both workflows run every control activity
// with these options; they are recorded in the histories, so change them for both or none.
func ControlCtx(ctx workflow.Context, summary string, timeout time.Duration) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: taskqueue.Control, StartToCloseTimeout: timeout, Summary: summary,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2,
			MaximumInterval: 10 * time.Second, MaximumAttempts: 10},
	})
}

// Release runs ReleaseInstances (idempotent, retried) for the ids of owner's instances;
// none is no command at all.
func Release(ctx workflow.Context, owner string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	err := workflow.ExecuteActivity(ControlCtx(ctx, fmt.Sprintf("release %d instances of %s", len(ids), owner), 2*time.Minute),
		fleet.ActivityReleaseInstances, ids).Get(ctx, nil)
	if err != nil {
		return fmt.Errorf("releasing %v: %w", ids, err)
	}
	return nil
}

// ReleaseStragglers lists the instances still tagged with the job's id after its held ones
// were released (a fleet interrupted mid-create leaves some), releases them through release
// and lists again: what is still listed then leaked. It returns the stragglers' ids (none:
// nothing was listed, and nothing more is run) and how many leaked.
func ReleaseStragglers(ctx workflow.Context, jobID string, release func(workflow.Context, []string) error) (stragglers []string, leaked int, err error) {
	var left []cloud.Instance
	lctx := ControlCtx(ctx, "list instances still tagged "+cloud.JobTag+"="+jobID, time.Minute)
	if err := workflow.ExecuteActivity(lctx, fleet.ActivityListJobInstances, jobID).Get(ctx, &left); err != nil {
		return nil, 0, fmt.Errorf("listing leftover instances: %w", err)
	}
	if len(left) == 0 {
		return nil, 0, nil
	}
	ids := cloud.IDs(left)
	if err := release(ctx, ids); err != nil {
		return nil, 0, err
	}
	if err := workflow.ExecuteActivity(lctx, fleet.ActivityListJobInstances, jobID).Get(ctx, &left); err != nil {
		return nil, 0, fmt.Errorf("listing leftover instances: %w", err)
	}
	return ids, len(left), nil
}

// Fleet runs the Fleet child workflow (on the control queue) as workflowID for in.Groups.
// The caller names the child and the idempotency token: they differ between the workflows
// and are recorded in their histories.
func Fleet(ctx workflow.Context, workflowID string, in fleet.Input) (fleet.Result, error) {
	n := in.Count()
	cctx := workflow.WithChildOptions(ctx, FleetOptions(workflowID, in))
	var res fleet.Result
	if err := workflow.ExecuteChildWorkflow(cctx, fleet.WorkflowFleet, in).Get(ctx, &res); err != nil {
		return res, fmt.Errorf("acquiring %d instances: %w", n, err)
	}
	return res, nil
}

// FleetOptions are the options of the Fleet child workflowID acquiring in, for a caller that
// runs it in the background (Fleet waits for it).
func FleetOptions(workflowID string, in fleet.Input) workflow.ChildWorkflowOptions {
	return workflow.ChildWorkflowOptions{
		WorkflowID:    workflowID,
		TaskQueue:     taskqueue.Control,
		StaticSummary: fmt.Sprintf("acquire %d instances in %d offerings for %s", in.Count(), len(in.Groups), in.JobID),
	}
}

// Describe runs DescribeInstances for the ids of owner's instances (an id the provider no
// longer knows comes back terminated); none is no command at all.
func Describe(ctx workflow.Context, owner string, ids []string) ([]cloud.Instance, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var got []cloud.Instance
	err := workflow.ExecuteActivity(ControlCtx(ctx, fmt.Sprintf("describe %d instances of %s", len(ids), owner), time.Minute),
		fleet.ActivityDescribeInstances, ids).Get(ctx, &got)
	if err != nil {
		return nil, fmt.Errorf("describing instances: %w", err)
	}
	return got, nil
}

// TimeScale asks the provider for its time scale (fleet.ActivityTimeScale): every job asks
// once at its start and takes the answer as given from then on.
func TimeScale(ctx workflow.Context) (cloud.TimeScale, error) {
	var scale cloud.TimeScale
	err := workflow.ExecuteActivity(ControlCtx(ctx, "ask the provider for its time scale", time.Minute),
		fleet.ActivityTimeScale).Get(ctx, &scale)
	return scale, err
}
