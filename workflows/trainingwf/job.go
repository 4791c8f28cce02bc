package trainingwf

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workflows/internal/jobwf"
)

// TrainingJob trains one model to its last iteration on spot GPUs: plan on what can be had,
// acquire, run a trainer per rank on its machine, and on every preemption replan on what is
// left plus what can be bought, relaunch and restore from the latest durable checkpoint.
// Whatever happens, every instance is released at the end (in a disconnected context on
// cancel and failure). The result is the final status: cost, plan history, verification.
func TrainingJob(ctx workflow.Context, in training.JobInput) (training.JobStatus, error) {
	j := newJob(ctx, in)
	if err := j.registerHandlers(ctx); err != nil {
		return j.status, err
	}
	if err := j.admit(ctx); err != nil {
		j.status.Error = err.Error()
		j.finished = true
		j.setPhase(ctx, training.PhaseFailed)
		return j.snapshot(), err
	}
	j.event(ctx, "started")
	err := j.run(ctx)
	return j.finish(ctx, err)
}

// run is the job's main loop; it returns nil when the job completed and verified.
func (j *job) run(ctx workflow.Context) error {
	reason := "initial"
	if j.in.Carried != nil && j.plan != nil {
		reason = ""
	}
	planFails := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if j.pauseRequested {
			if err := j.pause(ctx); err != nil {
				return err
			}
			reason = "resume"
		}
		if reason != "" || j.plan == nil {
			err := j.planAndAcquire(ctx, reason)
			if errors.Is(err, errNoPlan) && j.mayWaitForCapacity(ctx, planFails) && ctx.Err() == nil {
				planFails++
				j.status.Error = err.Error()
				if j.usesPolicy(ctx) {
					if j.policyWhileWaiting(ctx) {
						reason = "deadline"
						continue
					}
				} else if workflow.GetVersion(ctx, "deadline-while-waiting", workflow.DefaultVersion, 1) == 1 &&
					j.strategy.Waiting(workflow.Now(ctx), j.opts.RetryWait, j.status.Iterations-j.status.Iteration, j.lastPace()) {
					j.event(ctx, "waiting for spot capacity would miss the deadline: buying on-demand capacity")
					reason = "deadline"
					continue
				}
				if workflow.GetVersion(ctx, versionReleaseWhileWaiting, workflow.DefaultVersion, 1) == 1 {
					if err := j.releaseHeldWhileWaiting(ctx); err != nil {
						return err
					}
				}
				j.event(ctx, "no plan yet: waiting for capacity")
				if workflow.GetVersion(ctx, versionWaitingPhase, workflow.DefaultVersion, 1) == 1 {
					j.setPhase(ctx, training.PhaseWaiting)
					j.publish(ctx)
				}
				if err := workflow.NewTimerWithOptions(ctx, j.opts.RetryWait, workflow.TimerOptions{Summary: "wait for capacity"}).Get(ctx, nil); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			planFails, j.status.Error, reason = 0, "", ""
		}
		restore, err := j.latestCheckpoint(ctx)
		if err != nil {
			return err
		}
		if restore >= j.spec.Iterations {
			return j.complete(ctx, restore)
		}
		j.launch(ctx, restore)
		out, err := j.watch(ctx)
		if err != nil {
			return err
		}
		j.settleScaleUp(ctx)
		switch out.kind {
		case outDone:
			step, err := j.latestCheckpoint(ctx)
			if err != nil {
				return err
			}
			if step >= j.spec.Iterations {
				j.trainers = nil
				return j.complete(ctx, step)
			}
			j.trainerFails++
			if j.trainerFails > j.opts.MaxTrainerFailures {
				return temporal.NewNonRetryableApplicationError(fmt.Sprintf("trainers finished %d times without a durable final step (latest %d)", j.trainerFails, step), "TrainerFailed", nil)
			}
			j.event(ctx, fmt.Sprintf("trainers finished but the latest durable step is %d: relaunching", step))
		case outLost:
			reason = out.lossReason()
			if err := j.onLost(ctx, out); err != nil {
				return err
			}
		case outRestart:
			j.stopTrainers(ctx, nil)
		case outReplan:
			j.stopTrainers(ctx, nil)
			reason = out.reason
		case outPause:
			// handled at the top of the loop
			j.stopTrainers(ctx, nil)
		case outContinueAsNew:
			j.stopTrainers(ctx, nil)
			return j.continueAsNew(ctx)
		}
	}
}

// onLost takes in the other losses already reported (withQueuedLosses), counts the
// preemptions, stops the epoch, avoids the zones for a while (unless the deadline policy
// weighs them) and drops the lost instances (releasing them, which is a no-op for preempted
// ones and frees stuck ones).
func (j *job) onLost(ctx workflow.Context, out outcome) error {
	if workflow.GetVersion(ctx, versionLostTogether, workflow.DefaultVersion, 1) == 1 {
		out = j.withQueuedLosses(ctx, out)
	}
	lost := map[string]bool{}
	now := workflow.Now(ctx)
	var ids []string
	for _, in := range out.lost {
		lost[in.ID] = true
		ids = append(ids, in.ID)
		if out.preempted[in.ID] {
			j.status.Preemptions++
			if !j.usesPolicy(ctx) {
				// Under the deadline policy the policy weighs zones by their preemptions
				// (its memory); avoiding the zone here as well left the job without any
				// pool when the policy still placed spot GPUs in it.
				j.strategy.Preempted(in.Zone, now)
			}
			if j.lostSince == nil {
				j.lostSince = map[string]int{}
			}
			j.lostSince[in.Zone] += max(in.GPUs, 1)
		} else {
			j.status.LostInstances++
		}
	}
	j.setPhase(ctx, training.PhaseRecovering)
	j.stopTrainers(ctx, lost)
	j.held = slices.DeleteFunc(j.held, func(in cloud.Instance) bool { return lost[in.ID] })
	j.event(ctx, fmt.Sprintf("lost %v", ids))
	return j.release(ctx, ids)
}

// pause stops the trainers (a checkpoint is durable or the wait ran out), releases every
// instance and waits for resume.
func (j *job) pause(ctx workflow.Context) error {
	j.stopTrainers(ctx, nil)
	if err := j.releaseAll(ctx); err != nil {
		return err
	}
	j.pauseRequested = false
	j.status.Paused = true
	j.setPhase(ctx, training.PhasePaused)
	if err := workflow.Await(ctx, func() bool { return j.resumeRequested }); err != nil {
		return err
	}
	j.resumeRequested = false
	j.status.Paused = false
	j.plan, j.placement = nil, nil
	j.event(ctx, "resumed")
	return nil
}

// releaseAll releases every held instance.
func (j *job) releaseAll(ctx workflow.Context) error {
	ids := cloud.IDs(j.held)
	if err := j.release(ctx, ids); err != nil {
		return err
	}
	j.event(ctx, fmt.Sprintf("released %d instances", len(ids)))
	j.held = nil
	return nil
}

// versionReleaseWhileWaiting gates giving back what a job waiting for capacity holds after
// HoldWhileWaiting; runs recorded before held it through the whole wait.
const versionReleaseWhileWaiting = "release-while-waiting"

// releaseHeldWhileWaiting gives back every machine the job holds once it has waited
// HoldWhileWaiting (provider time) for a plan: nothing runs on them, and a drought of hours
// billed them for hours (issue 21). The job restores from its durable checkpoint, not from
// them, so nothing is lost; the next plan buys what it needs.
func (j *job) releaseHeldWhileWaiting(ctx workflow.Context) error {
	if len(j.held) == 0 || j.droughtSince.IsZero() {
		return nil
	}
	waited := workflow.Now(ctx).Sub(j.droughtSince)
	if waited < j.strategy.Scale.Wall(j.opts.HoldWhileWaiting) {
		return nil
	}
	ids := cloud.IDs(j.held)
	if err := j.release(ctx, ids); err != nil {
		return err
	}
	j.accrue(workflow.Now(ctx)) // billed until given back
	j.held = nil
	j.event(ctx, fmt.Sprintf("released the %d instances held through %s of waiting for capacity", len(ids),
		j.strategy.Scale.Sim(waited).Round(time.Second)))
	return nil
}

// mayWaitForCapacity reports whether a job whose round fails had found no plan for fails
// rounds before may wait and try again: for MaxWaitForCapacity of provider time since the
// first of those rounds (and at most MaxPlanFailures rounds, when set). Runs recorded before
// count rounds only.
func (j *job) mayWaitForCapacity(ctx workflow.Context, fails int) bool {
	if workflow.GetVersion(ctx, "capacity-wait-in-provider-time", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return fails < j.opts.LegacyMaxPlanFailures()
	}
	if j.opts.MaxPlanFailures > 0 && fails >= j.opts.MaxPlanFailures {
		return false
	}
	now := workflow.Now(ctx)
	if fails == 0 {
		j.droughtSince = now
	}
	return now.Sub(j.droughtSince) < j.strategy.Scale.Wall(j.opts.MaxWaitForCapacity)
}

// complete releases everything, proves nothing leaked and verifies the simulated state. The
// machines go first: verifying reads the store, not them, and they would be billed meanwhile
// (histories from before this order replay the old one: verify, then release).
func (j *job) complete(ctx workflow.Context, step int64) error {
	j.status.LastCheckpoint = step
	j.status.Iteration = j.spec.Iterations
	releaseFirst := workflow.GetVersion(ctx, "release-before-verify", workflow.DefaultVersion, 1) == 1
	if releaseFirst {
		j.setPhase(ctx, training.PhaseReleasing)
		if err := j.cleanup(ctx); err != nil {
			return err
		}
	}
	if kind := j.spec.Trainer.Kind; kind == "" || kind == "sim" {
		req := training.VerifyStateRequest{Store: j.status.CheckpointStore, Step: step, Seed: j.spec.Trainer.Seed, ModelLayers: j.modelLayers}
		err := workflow.ExecuteActivity(jobwf.ControlCtx(ctx, fmt.Sprintf("verify step %d against an uninterrupted run", step), 10*time.Minute),
			training.ActivityVerifyTrainedState, req).Get(ctx, nil)
		j.status.StateVerified = err == nil
		if err != nil {
			// A final state that does not verify is a failed job, never a completed one.
			j.status.VerifyError = err.Error()
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("the final state at step %d does not verify: %v", step, err),
				training.ErrTypeStateMismatch, err)
		}
	}
	if !releaseFirst {
		j.setPhase(ctx, training.PhaseReleasing)
		if err := j.cleanup(ctx); err != nil {
			return err
		}
	}
	j.setPhase(ctx, training.PhaseCompleted)
	return nil
}

// cleanup releases every held instance, then the stragglers still tagged with the job's id
// (a fleet interrupted mid-create); what is still listed after that leaked.
func (j *job) cleanup(ctx workflow.Context) error {
	if err := j.releaseAll(ctx); err != nil {
		return err
	}
	ids, leaked, err := jobwf.ReleaseStragglers(ctx, j.id, j.release)
	if err != nil || len(ids) == 0 {
		return err
	}
	j.status.LeakedInstances = leaked
	j.event(ctx, fmt.Sprintf("released %d stragglers", len(ids)))
	return nil
}

// finish turns the run's end into the workflow's result (jobwf.Finish); on cancel or
// failure the epoch is cancelled and every instance released in a disconnected context.
func (j *job) finish(ctx workflow.Context, err error) (training.JobStatus, error) {
	return jobwf.Finish(ctx, err, jobwf.End[training.JobStatus]{
		Snapshot: j.snapshot,
		Error:    &j.status.Error,
		Interrupt: func() {
			if j.cancelEpoch != nil {
				j.cancelEpoch()
			}
		},
		SetPhase:  j.setPhase,
		Cleanup:   j.cleanup,
		Done:      func() { j.finished = true },
		Releasing: training.PhaseReleasing, Cancelled: training.PhaseCancelled, Failed: training.PhaseFailed,
	})
}

// continueAsNew hands the job's state to a new run; the trainers were stopped and the new
// run relaunches the same plan from the latest durable step.
func (j *job) continueAsNew(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	j.drainSignals(ctx)
	j.event(ctx, "continue as new")
	next := j.in
	next.Spec = j.spec
	next.Carried = &training.CarryState{Status: j.snapshot(), Instances: append([]cloud.Instance(nil), j.held...),
		OnDemandPrices: j.odPrice, Unavailable: j.strategy.Unavailable, Avoided: j.strategy.Avoided, Placement: j.placement,
		ModelLayers: j.modelLayers, SpotOnlyIterSeconds: j.strategy.SpotIterSeconds, TimeScale: j.scale,
		PolicyMemory: j.policyMem, PolicyDecision: j.policyReq}
	return workflow.NewContinueAsNewError(ctx, training.WorkflowTrainingJob, next)
}

// drainSignals takes every buffered signal before the run ends, so none is lost across
// continue-as-new: commits and notices update the carried status; progress of the stopped
// epoch is stale anyway. A "preempted" report is left to the next run's poll to confirm.
func (j *job) drainSignals(ctx workflow.Context) {
	committed := workflow.GetSignalChannel(ctx, training.SignalCheckpointCommitted)
	for {
		var m training.CheckpointCommitted
		if !committed.ReceiveAsync(&m) {
			break
		}
		if m.Step > j.lastCounted {
			j.lastCounted = m.Step
			j.status.CheckpointsCommitted++
			j.status.LastCheckpoint = max(j.status.LastCheckpoint, m.Step)
		}
	}
	notices := workflow.GetSignalChannel(ctx, training.SignalPreemptionNotice)
	for {
		var n training.PreemptionNotice
		if !notices.ReceiveAsync(&n) {
			break
		}
		if n.Kind == cloud.Notice && j.holds(n.InstanceID) {
			j.status.Notices++
		}
	}
	progress := workflow.GetSignalChannel(ctx, training.SignalProgress)
	for progress.ReceiveAsync(nil) {
	}
}

// versionWaitingPhase: a job that found no plan shows the phase "waiting" (status,
// SchoonerPhase, the UI) while it waits for capacity; runs recorded before stayed "planning".
const versionWaitingPhase = "waiting-phase"

// versionLostTogether: the loss reports already queued when a loss is confirmed are confirmed
// with it (withQueuedLosses); runs recorded before took them one by one.
const versionLostTogether = "lost-together"
