package trainingwf

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workflows/internal/jobwf"
)

// versionAdmission marks runs that ask the control plane for its limits and the provider for
// its time scale, and keep their status in the memo; histories recorded before took the
// default limits and the submitter's JobInput.TimeScale, and had no memo.
const versionAdmission = "admission-limits-and-time-scale"

// versionScaledPoll: the poll and the retry wait default to the provider's time
// (JobOptions.ScaledTo); runs recorded before polled every 3 wall seconds.
const versionScaledPoll = "poll-in-provider-time"

// admit is the job's door, the same for every entry point (schooner train submit, the plain
// temporal CLI, a program): it applies the spec's defaults and validates it within the
// control plane's limits, failing at once and for good with every bad field named, before
// anything is bought. Then it resolves, once, what the rest of the job takes as given: the
// provider's time scale and the deadline, which must still be ahead.
func (j *job) admit(ctx workflow.Context) error {
	asks := workflow.GetVersion(ctx, versionAdmission, workflow.DefaultVersion, 1) != workflow.DefaultVersion
	j.limits, j.memoStatus = training.DefaultLimits, asks
	if asks {
		if err := j.askLimits(ctx); err != nil {
			return err
		}
	}
	if j.in.Carried == nil {
		j.spec = j.spec.WithDefaults()
		if err := j.spec.ValidateWithin(j.limits); err != nil {
			return invalidSpec(err.Error(), training.Problems(err))
		}
		j.status.Budget = j.spec.Budget
		j.strategy.Policy = j.spec.Spot
	}
	scale := cloud.TimeScale(j.in.TimeScale)
	if asks {
		var err error
		if scale, err = j.askTimeScale(ctx); err != nil {
			return err
		}
	}
	j.scale, j.strategy.Scale = scale, scale
	if workflow.GetVersion(ctx, versionScaledPoll, workflow.DefaultVersion, 1) == 1 {
		j.opts = j.in.Options.ScaledTo(scale)
	}
	if j.status.Deadline.IsZero() && j.spec.Deadline != "" {
		d, err := training.ParseDeadline(j.spec.Deadline)
		if err != nil {
			return invalidSpec("deadline: "+err.Error(), nil)
		}
		submitted := j.in.SubmittedAt
		if submitted.IsZero() {
			submitted = workflow.GetInfo(ctx).WorkflowStartTime
		}
		j.status.Deadline = d.Resolve(submitted, scale)
		if now := workflow.Now(ctx); asks && !j.status.Deadline.After(now) {
			return invalidSpec(fmt.Sprintf("deadline: %s is already past (now %s): a job cannot keep it, and spot-with-fallback would buy on-demand capacity at once",
				j.spec.Deadline, now.UTC().Format(time.RFC3339)), []training.FieldError{{Field: "deadline", Problem: "already past"}})
		}
	}
	j.strategy.Deadline = j.status.Deadline
	if j.status.CheckpointStore == "" {
		j.status.CheckpointStore = j.spec.Checkpoint.Store
		if asks {
			ns, err := training.JobStore(j.spec.Checkpoint.Store, j.id, firstRunID(ctx))
			if err != nil {
				return invalidSpec("checkpoint.store: "+err.Error(), []training.FieldError{{Field: "checkpoint.store", Problem: err.Error()}})
			}
			j.status.CheckpointStore = ns
		}
	}
	return nil
}

// invalidSpec is the final error of a job refused at the door.
func invalidSpec(msg string, problems []training.FieldError) error {
	return temporal.NewNonRetryableApplicationError(msg, training.ErrTypeInvalidSpec, nil, problems)
}

// askLimits reads the control plane's limits from its workers (a local activity: the answer
// is recorded, so replay takes the same limits even if the operator changed them since).
func (j *job) askLimits(ctx workflow.Context) error {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3},
		Summary: "read this control plane's job limits",
	})
	var lim training.Limits
	if err := workflow.ExecuteLocalActivity(lctx, training.ActivityAdmissionLimits).Get(ctx, &lim); err != nil {
		return fmt.Errorf("reading the control plane's limits: %w", err)
	}
	j.limits = lim.WithDefaults()
	return nil
}

// askTimeScale is the provider's time scale: asked once per job and carried across
// continue-as-new.
func (j *job) askTimeScale(ctx workflow.Context) (cloud.TimeScale, error) {
	if c := j.in.Carried; c != nil && c.TimeScale > 0 {
		return c.TimeScale, nil
	}
	return jobwf.TimeScale(ctx)
}

// firstRunID is the run id of the job's first run, the same in every run continued as new
// (the current run's when the server does not say, as in the SDK's test environment).
func firstRunID(ctx workflow.Context) string {
	info := workflow.GetInfo(ctx)
	if info.FirstRunID != "" {
		return info.FirstRunID
	}
	return info.WorkflowExecution.RunID
}
