package trainingwf

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/training"
)

// versionTimeScale marks runs that ask the provider for its time scale; histories recorded
// before it took JobInput.TimeScale from the submitter.
const versionTimeScale = "time-scale-from-provider"

// admit is the job's door, the same for every entry point (schooner train submit, the plain
// temporal CLI, a program): it applies the spec's defaults and validates it, failing at once
// and for good with every bad field named, before anything is bought. Then it resolves, once,
// what the rest of the job takes as given: the provider's time scale and the deadline.
func (j *job) admit(ctx workflow.Context) error {
	if j.in.Carried == nil {
		j.spec = j.spec.WithDefaults()
		if err := j.spec.Validate(); err != nil {
			return temporal.NewNonRetryableApplicationError(err.Error(), training.ErrTypeInvalidSpec, nil, training.Problems(err))
		}
		j.status.Budget = j.spec.Budget
		j.strategy.Policy = j.spec.Spot
	}
	scale, err := j.timeScale(ctx)
	if err != nil {
		return err
	}
	j.scale, j.strategy.Scale = scale, scale
	if j.status.Deadline.IsZero() && j.spec.Deadline != "" {
		d, err := training.ParseDeadline(j.spec.Deadline)
		if err != nil {
			return temporal.NewNonRetryableApplicationError("deadline: "+err.Error(), training.ErrTypeInvalidSpec, nil)
		}
		submitted := j.in.SubmittedAt
		if submitted.IsZero() {
			submitted = workflow.GetInfo(ctx).WorkflowStartTime
		}
		j.status.Deadline = d.Resolve(submitted, scale)
	}
	j.strategy.Deadline = j.status.Deadline
	return nil
}

// timeScale is the provider's time scale: asked once per job and carried across
// continue-as-new. Runs recorded before the job asked used the submitter's number.
func (j *job) timeScale(ctx workflow.Context) (cloud.TimeScale, error) {
	if workflow.GetVersion(ctx, versionTimeScale, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return cloud.TimeScale(j.in.TimeScale), nil
	}
	if c := j.in.Carried; c != nil && c.TimeScale > 0 {
		return c.TimeScale, nil
	}
	var scale cloud.TimeScale
	err := workflow.ExecuteActivity(j.controlCtx(ctx, "ask the provider for its time scale", time.Minute),
		fleet.ActivityTimeScale).Get(ctx, &scale)
	return scale, err
}
