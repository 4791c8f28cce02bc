package trainingwf

import (
	"errors"
	"fmt"
	"maps"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workflows/internal/jobwf"
)

// outcomeKind is what ends a watch of the running epoch.
type outcomeKind int

const (
	outDone          outcomeKind = iota // every trainer finished
	outLost                             // instances lost (confirmed with the provider)
	outRestart                          // relaunch on the same instances (false alarm, trainer crash)
	outReplan                           // replan (deadline, budget, resize)
	outPause                            // a pause was asked and a checkpoint is durable
	outContinueAsNew                    // the history is long
)

// outcome ends a watch.
type outcome struct {
	kind   outcomeKind
	reason string
	lost   []cloud.Instance
	// preempted is false for an instance replaced because it was stuck.
	preempted map[string]bool
}

// watch waits on the running epoch: trainer results, the job's signals, the poll timer and
// the requests of update handlers, until something needs the main loop.
func (j *job) watch(ctx workflow.Context) (outcome, error) {
	progress := workflow.GetSignalChannel(ctx, training.SignalProgress)
	committed := workflow.GetSignalChannel(ctx, training.SignalCheckpointCommitted)
	notices := workflow.GetSignalChannel(ctx, training.SignalPreemptionNotice)
	var poll workflow.Future
	pctx, stopPoll := workflow.WithCancel(ctx)
	defer stopPoll()
	for {
		if err := ctx.Err(); err != nil {
			return outcome{}, err
		}
		if poll == nil {
			poll = workflow.NewTimerWithOptions(pctx, j.opts.PollInterval, workflow.TimerOptions{Summary: "poll instances"})
		}
		var finished *trainerRun
		var notice *training.PreemptionNotice
		polled, scaled := false, false
		sel := workflow.NewSelector(ctx)
		for _, t := range j.trainers {
			t.Watch(ctx, sel, func() { finished = t })
		}
		sel.AddReceive(progress, func(c workflow.ReceiveChannel, _ bool) { j.onProgress(ctx, c) })
		sel.AddReceive(committed, func(c workflow.ReceiveChannel, _ bool) { j.onCommitted(ctx, c) })
		jobwf.Receive(ctx, sel, notices, &notice)
		sel.AddReceive(j.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.AddFuture(poll, func(workflow.Future) { polled, poll = true, nil })
		if j.scaleUp != nil {
			sel.AddFuture(j.scaleUp.fut, func(workflow.Future) { scaled = true })
		}
		sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
		sel.Select(ctx)
		if err := ctx.Err(); err != nil {
			return outcome{}, err
		}

		switch {
		case notice != nil:
			if out, ok, err := j.onNotice(ctx, *notice); err != nil || ok {
				return out, err
			}
		case finished != nil:
			if out, ok, err := j.onTrainerDone(ctx, finished); err != nil || ok {
				return out, err
			}
		case polled:
			if out, ok, err := j.onPoll(ctx); err != nil || ok {
				return out, err
			}
		case scaled:
			if out, ok, err := j.onScaledUp(ctx); err != nil || ok {
				return out, err
			}
		}
		if j.replanReason != "" {
			r := j.replanReason
			j.replanReason = ""
			return outcome{kind: outReplan, reason: r}, nil
		}
		if j.pauseRequested && (j.status.LastCheckpoint > j.pauseFrom || !workflow.Now(ctx).Before(j.pauseAt)) {
			return outcome{kind: outPause}, nil
		}
	}
}

// onNotice records a notice; a "preempted" report is acted on only after the provider
// confirms it.
func (j *job) onNotice(ctx workflow.Context, n training.PreemptionNotice) (outcome, bool, error) {
	if !j.holds(n.InstanceID) {
		return outcome{}, false, nil
	}
	if n.Kind == cloud.Notice {
		first := !j.noticed[n.InstanceID]
		j.status.Notices++
		j.noticed[n.InstanceID] = true
		j.event(ctx, "preemption notice for "+n.InstanceID)
		if first && workflow.GetVersion(ctx, versionRelayNotices, workflow.DefaultVersion, 1) == 1 {
			j.relayNotice(ctx, n)
		}
		return outcome{}, false, nil
	}
	return j.confirm(ctx, []string{n.InstanceID})
}

// onTrainerDone handles one trainer's end: all finished means done; a failure is confirmed
// with the provider before it is called a preemption.
func (j *job) onTrainerDone(ctx workflow.Context, t *trainerRun) (outcome, bool, error) {
	if t.Err == nil {
		// A saver's own word on its newest durable step keeps the status current; the job
		// still reads the store before it calls the run complete.
		if t.saver {
			j.status.LastCheckpoint = max(j.status.LastCheckpoint, t.Result.LastCheckpoint)
		}
		for _, o := range j.trainers {
			if !o.Done || o.Err != nil {
				return outcome{}, false, nil
			}
		}
		return outcome{kind: outDone}, true, nil
	}
	var timeout *temporal.TimeoutError
	stuck := errors.As(t.Err, &timeout) && timeout.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START
	out, ok, err := j.confirm(ctx, []string{t.instanceID})
	if err != nil || ok {
		return out, ok, err
	}
	if stuck {
		// The provider runs it, but no node agent picked the task up: replace the machine.
		inst, _ := j.heldInstance(t.instanceID)
		return outcome{kind: outLost, lost: []cloud.Instance{inst}, preempted: map[string]bool{}}, true, nil
	}
	j.trainerFails++
	if j.trainerFails > j.opts.MaxTrainerFailures {
		return outcome{}, false, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("trainer rank %d on %s failed %d times in a row on a live machine: %v", t.rank, t.instanceID, j.trainerFails, t.Err),
			"TrainerFailed", t.Err)
	}
	j.event(ctx, fmt.Sprintf("trainer rank %d on %s failed on a live machine (false alarm): relaunching", t.rank, t.instanceID))
	return outcome{kind: outRestart, reason: "trainer failure"}, true, nil
}

// onPoll describes the held instances (to catch losses without notice) and checks budget,
// deadline and history length.
func (j *job) onPoll(ctx workflow.Context) (outcome, bool, error) {
	j.event(ctx, "")
	if b := j.status.Budget.TotalUSD; b > 0 && j.status.CostUSD >= b {
		return outcome{}, false, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("total budget of $%.2f exhausted ($%.2f spent) at iteration %d", b, j.status.CostUSD, j.status.Iteration), "BudgetExhausted", nil)
	}
	ids := cloud.IDs(j.held)
	if out, ok, err := j.confirm(ctx, ids); err != nil || ok {
		return out, ok, err
	}
	if j.usesPolicy(ctx) {
		if j.policyDue(ctx) {
			if out, ok := j.policyCheck(ctx); ok {
				return out, true, nil
			}
		}
	} else if j.plan != nil && j.strategy.DeadlineCheck(workflow.Now(ctx), j.status.Iterations-j.status.Iteration, j.plan.Estimate.IterTime) {
		return outcome{kind: outReplan, reason: "deadline"}, true, nil
	}
	if j.scaleUpDue(ctx) {
		j.startScaleUp(ctx)
	}
	if workflow.GetInfo(ctx).GetContinueAsNewSuggested() || (j.opts.ContinueAsNewAfter > 0 && j.events >= j.opts.ContinueAsNewAfter) {
		return outcome{kind: outContinueAsNew}, true, nil
	}
	return outcome{}, false, nil
}

// confirm asks the provider about instances; those gone are lost, and counted as preempted
// only when the provider says it reclaimed them: an instance it terminated or no longer knows
// (a simulated market restarted with the control plane, a machine someone deleted) is lost
// but was not preempted. A provider that cannot be asked is an error only after the
// activity's retries.
func (j *job) confirm(ctx workflow.Context, ids []string) (outcome, bool, error) {
	if len(ids) == 0 {
		return outcome{}, false, nil
	}
	got, err := jobwf.Describe(ctx, j.id, ids)
	if err != nil {
		return outcome{}, false, err
	}
	j.noteStates(ctx, got)
	out := outcome{kind: outLost, preempted: map[string]bool{}}
	for _, in := range got {
		held, ok := j.heldInstance(in.ID)
		if !ok {
			continue
		}
		if v := cloud.VerdictOf(in); v.Lost() {
			out.lost = append(out.lost, held)
			out.preempted[in.ID] = v == cloud.VerdictPreempted
		}
	}
	return out, len(out.lost) > 0, nil
}

// withQueuedLosses adds to a confirmed loss the held instances whose loss reports are already
// queued, confirmed in one more describe. A provider takes a zone's machines within
// moments of each other; confirming only the first left the job asking the trainers on the
// others to stop, on machines already gone whose agents never answer, until the stop's wait
// ran out (twelve wall seconds, twelve simulated minutes at 60x), billing them all the while:
// +20% on the bundled trace's 178 h start against the policy simulator. Other notices taken
// from the queue are recorded as the watch records them; since loss-describes-all the describe
// asks about every other held machine as well. A describe that fails leaves the loss as it
// was: the next poll finds the rest.
func (j *job) withQueuedLosses(ctx workflow.Context, out outcome) outcome {
	notices := workflow.GetSignalChannel(ctx, training.SignalPreemptionNotice)
	seen := map[string]bool{}
	for _, in := range out.lost {
		seen[in.ID] = true
	}
	var ids []string
	for {
		var n training.PreemptionNotice
		if !notices.ReceiveAsync(&n) {
			break
		}
		if n.Kind == cloud.Notice {
			_, _, _ = j.onNotice(ctx, n) // a notice only records and relays
			continue
		}
		if j.holds(n.InstanceID) && !seen[n.InstanceID] {
			seen[n.InstanceID] = true
			ids = append(ids, n.InstanceID)
		}
	}
	if workflow.GetVersion(ctx, versionLossDescribesAll, workflow.DefaultVersion, 1) == 1 {
		for _, in := range j.held {
			if !seen[in.ID] {
				seen[in.ID] = true
				ids = append(ids, in.ID)
			}
		}
	}
	more, ok, err := j.confirm(ctx, ids)
	if err != nil {
		j.event(ctx, "confirming the other reported losses: "+err.Error())
		return out
	}
	if !ok {
		return out
	}
	if out.preempted == nil {
		out.preempted = map[string]bool{}
	}
	out.lost = append(out.lost, more.lost...)
	maps.Copy(out.preempted, more.preempted)
	return out
}

// versionLossDescribesAll: a confirmed loss describes every other held machine too, not only
// those whose loss reports are queued. A zone's machines go at one instant but their agents'
// reports come when they come: at the bundled trace's 178 h start two of four machines taken
// together had none queued yet, and the job stopped the epoch, billing them, for eleven wall
// seconds (+7% over the market's bill) before a poll found them gone.
const versionLossDescribesAll = "loss-describes-all"

// holds reports whether the job holds the instance.
func (j *job) holds(id string) bool { _, ok := j.heldInstance(id); return ok }

// heldInstance finds a held instance by id.
func (j *job) heldInstance(id string) (cloud.Instance, bool) {
	for _, in := range j.held {
		if in.ID == id {
			return in, true
		}
	}
	return cloud.Instance{}, false
}

// lossReason is the plan history's reason for replanning after a loss: "preemption" when the
// provider reclaimed any of the instances, "lost" otherwise.
func (o outcome) lossReason() string {
	for _, in := range o.lost {
		if o.preempted[in.ID] {
			return "preemption"
		}
	}
	return "lost"
}
