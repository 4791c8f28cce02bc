package trainingwf

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/schooner-ml/schooner/training"
	"go.temporal.io/sdk/workflow"
)

// onProgress takes one progress signal; reports of an older epoch are stale and ignored.
// The job's iteration is the slowest rank's, since every rank steps together.
func (j *job) onProgress(ctx workflow.Context, c workflow.ReceiveChannel) {
	var p progressSignal
	c.Receive(ctx, &p)
	if p.InstanceID != "" {
		j.warm[p.InstanceID] = true
	}
	if p.Epoch != j.status.Epoch {
		return
	}
	if _, ok := j.rankIter[p.Rank]; !ok {
		return
	}
	j.rankIter[p.Rank] = max(j.rankIter[p.Rank], p.Iteration)
	low := int64(-1)
	for _, t := range j.trainers {
		if it := j.rankIter[t.rank]; low < 0 || it < low {
			low = it
		}
	}
	if low > j.status.Iteration {
		j.status.Iteration = low
		j.event(ctx, "progress")
	}
}

// onCommitted takes a checkpoint-committed signal: each saver sends one when a step is
// durable in the remote store, so a step is counted once.
func (j *job) onCommitted(ctx workflow.Context, c workflow.ReceiveChannel) {
	var m training.CheckpointCommitted
	c.Receive(ctx, &m)
	if m.Epoch != j.status.Epoch || m.Step <= j.lastCounted {
		return
	}
	j.lastCounted = m.Step
	j.status.CheckpointsCommitted++
	j.status.LastCheckpoint = max(j.status.LastCheckpoint, m.Step)
	j.trainerFails = 0
	kind := "checkpoint"
	if m.Emergency {
		kind = "emergency checkpoint"
	}
	j.event(ctx, fmt.Sprintf("%s %d durable", kind, m.Step))
}

// progressSignal is the progress signal's payload (training.Progress), read by field.
type progressSignal struct {
	Epoch      int    `json:"epoch"`
	Rank       int    `json:"rank"`
	InstanceID string `json:"instance_id"`
	Iteration  int64  `json:"iteration"`
}

// registerHandlers installs the status query and the updates. Signals are read by the
// watch loop from their channels, so none is lost while the job plans.
func (j *job) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, training.QueryStatus, func() (training.JobStatus, error) { return j.snapshot(), nil }); err != nil {
		return err
	}
	setBudget := func(ctx workflow.Context, req training.SetBudgetRequest) (training.JobStatus, error) {
		j.status.Budget = req.Budget
		j.spec.Budget = req.Budget
		if j.plan != nil && req.Budget.USDPerHour > 0 && j.plan.Estimate.USDPerHour > req.Budget.USDPerHour {
			j.request("budget")
		}
		j.event(ctx, fmt.Sprintf("budget set to $%.2f/h, $%.2f total", req.Budget.USDPerHour, req.Budget.TotalUSD))
		return j.snapshot(), nil
	}
	err := workflow.SetUpdateHandlerWithOptions(ctx, training.UpdateSetBudget, setBudget, workflow.UpdateHandlerOptions{
		Validator: func(_ workflow.Context, req training.SetBudgetRequest) error {
			if req.Budget.USDPerHour < 0 || req.Budget.TotalUSD < 0 {
				return fmt.Errorf("budget must not be negative: usd_per_hour %g, total_usd %g", req.Budget.USDPerHour, req.Budget.TotalUSD)
			}
			return j.notFinished()
		}})
	if err != nil {
		return err
	}
	resize := func(ctx workflow.Context, req training.ResizeRequest) (training.JobStatus, error) {
		j.spec.Resources.MaxGPUs = req.MaxGPUs
		j.request("resize")
		return j.snapshot(), nil
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, training.UpdateResize, resize, workflow.UpdateHandlerOptions{
		Validator: func(_ workflow.Context, req training.ResizeRequest) error {
			if req.MaxGPUs < 0 {
				return fmt.Errorf("max_gpus must not be negative, got %d", req.MaxGPUs)
			}
			return j.notFinished()
		}})
	if err != nil {
		return err
	}
	pause := func(ctx workflow.Context) (training.JobStatus, error) {
		j.pauseRequested = true
		j.pauseFrom = j.status.LastCheckpoint
		j.pauseAt = workflow.Now(ctx).Add(j.pauseWait())
		j.wake.SendAsync(true)
		err := workflow.Await(ctx, func() bool { return j.status.Paused || j.finished })
		return j.snapshot(), err
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, training.UpdatePause, pause, workflow.UpdateHandlerOptions{
		Validator: func(workflow.Context) error {
			if j.status.Paused || j.pauseRequested {
				return errors.New("the job is already paused or pausing")
			}
			return j.notFinished()
		}})
	if err != nil {
		return err
	}
	resume := func(ctx workflow.Context) (training.JobStatus, error) {
		j.resumeRequested = true
		j.wake.SendAsync(true)
		err := workflow.Await(ctx, func() bool { return !j.status.Paused || j.finished })
		return j.snapshot(), err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, training.UpdateResume, resume, workflow.UpdateHandlerOptions{
		Validator: func(workflow.Context) error {
			if !j.status.Paused {
				return errors.New("the job is not paused")
			}
			return j.notFinished()
		}})
}

// request asks the main loop to replan.
func (j *job) request(reason string) {
	j.replanReason = reason
	j.wake.SendAsync(true)
}

// notFinished rejects updates to a job that is over.
func (j *job) notFinished() error {
	if j.finished {
		return fmt.Errorf("the job is %s", j.status.Phase)
	}
	return nil
}

// pauseWait bounds how long a pause waits for the next checkpoint: two checkpoint
// intervals at the current estimate, and at least a poll.
func (j *job) pauseWait() time.Duration {
	d := j.opts.PollInterval
	if j.plan != nil && j.spec.Checkpoint.Every > 0 {
		w := j.scale.Wall(time.Duration(2 * float64(j.spec.Checkpoint.Every) * j.plan.Estimate.IterTime * float64(time.Second)))
		d = max(d, w)
	}
	return d
}

// snapshot is a copy of the status safe to hand out.
func (j *job) snapshot() training.JobStatus {
	s := j.status
	s.GPUs = maps.Clone(j.status.GPUs)
	s.Plans = append([]training.PlanRecord(nil), j.status.Plans...)
	s.Timeline = append([]training.TimelinePoint(nil), j.status.Timeline...)
	s.Instances = append([]string(nil), j.status.Instances...)
	s.Zones = append([]string(nil), j.status.Zones...)
	return s
}
