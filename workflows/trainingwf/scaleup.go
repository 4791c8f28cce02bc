package trainingwf

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workflows/internal/jobwf"
)

// A job that replanned onto less capacity (a preemption left it two GPUs of eight) would
// otherwise run on that plan to the end, though the market offers the capacity again. Every
// ScaleUpEvery (simulated) the running job plans again on what it holds plus what is offered
// now; when that plan is scaleUpGain better by the job's objective and the gain over the
// rest of the run is worth a restart, it acquires the instances the plan lacks while the
// trainers go on, and only once all of them are up does it replan onto them. Capacity that
// does not come costs no restart: what was acquired is released.

// scaleUpGain is how much better (iteration time, or cost per iteration for the cost
// objective) a plan on returned capacity must be than the running one.
const scaleUpGain = 1.25

// scaleUpVersion gates the check: runs recorded before it never looked.
const scaleUpVersion = "scale-up-on-returned-capacity"

// scaleUpProbe is a better plan whose missing instances are being acquired.
type scaleUpProbe struct {
	res    training.PlanJobResult
	offers []cloud.Offering
	fut    workflow.ChildWorkflowFuture
}

// scaleUpDue reports whether the running job should look for returned capacity now.
func (j *job) scaleUpDue(ctx workflow.Context) bool {
	if j.plan == nil || j.scaleUp != nil {
		return false
	}
	for _, in := range j.held {
		if j.noticed[in.ID] {
			return false // the replan the notice brings comes first
		}
	}
	if workflow.GetVersion(ctx, scaleUpVersion, workflow.DefaultVersion, 1) != 1 {
		return false
	}
	now := workflow.Now(ctx)
	if j.lastScaleCheck.IsZero() {
		j.lastScaleCheck = now
		return false
	}
	return !now.Before(j.lastScaleCheck.Add(j.scale.Wall(j.opts.ScaleUpEvery)))
}

// startScaleUp plans on what is held and offered now and, when that plan is worth a
// restart, starts acquiring what it lacks. A failure to list or plan is no reason to stop a
// job that trains: it is noted and the job looks again later.
func (j *job) startScaleUp(ctx workflow.Context) {
	now := workflow.Now(ctx)
	j.lastScaleCheck = now
	offers, err := j.offerings(ctx)
	if err != nil {
		j.event(ctx, "looking for returned capacity: "+err.Error())
		return
	}
	j.allOffers = offers
	res, err := j.planWith(ctx, j.strategy.Usable(offers, now))
	if err != nil || !j.worthScalingTo(res) {
		return
	}
	_, groups := assign(res.Replicas, j.held)
	if len(groups) == 0 || j.affords(res) != nil {
		return
	}
	j.scaleUps++
	in := fleet.Input{JobID: j.id, Groups: groups, Token: fmt.Sprintf("%s-%s-scaleup-%d", j.id, workflow.GetInfo(ctx).WorkflowExecution.RunID, j.scaleUps)}
	cctx := workflow.WithChildOptions(ctx, jobwf.FleetOptions(fmt.Sprintf("%s-scaleup-%d-%d", j.id, len(j.status.Plans), j.scaleUps), in))
	j.scaleUp = &scaleUpProbe{res: res, offers: offers, fut: workflow.ExecuteChildWorkflow(cctx, fleet.WorkflowFleet, in)}
	j.event(ctx, fmt.Sprintf("capacity returned: acquiring %d instances for %s (%.3g s per iteration, running plan %.3g s)",
		in.Count(), res.Summary, res.Estimate.IterTime, j.plan.Estimate.IterTime))
}

// worthScalingTo reports whether res beats the running plan by scaleUpGain on the job's
// objective, and whether the time it saves over the rest of the run is at least
// ScaleUpEvery (a restart and the acquisition cost about that much).
func (j *job) worthScalingTo(res training.PlanJobResult) bool {
	cur, next := j.plan.Estimate, res.Estimate
	if !(next.IterTime > 0) || !(cur.IterTime > 0) {
		return false
	}
	if j.spec.Objective == "cost" {
		if !(next.USDPerIteration > 0) || next.USDPerIteration*scaleUpGain > cur.USDPerIteration {
			return false
		}
	} else if next.IterTime*scaleUpGain > cur.IterTime {
		return false
	}
	left := float64(j.status.Iterations - j.status.Iteration)
	saved := time.Duration(left * (cur.IterTime - next.IterTime) * float64(time.Second))
	return saved >= j.opts.ScaleUpEvery
}

// onScaledUp takes the acquisition's result: with every instance the better plan needs up,
// the job replans onto them; otherwise what came is released and the running plan goes on.
func (j *job) onScaledUp(ctx workflow.Context) (outcome, bool, error) {
	p, got, ok := j.settleScaleUp(ctx)
	if !ok {
		return outcome{}, false, nil
	}
	if _, groups := assign(p.res.Replicas, j.held); len(groups) == 0 {
		return outcome{kind: outReplan, reason: "capacity returned"}, true, nil
	}
	ids := cloud.IDs(got.Instances)
	if len(ids) == 0 {
		return outcome{}, false, nil
	}
	if err := j.release(ctx, ids); err != nil {
		return outcome{}, false, err
	}
	j.held = slices.DeleteFunc(j.held, func(in cloud.Instance) bool { return slices.Contains(ids, in.ID) })
	j.event(ctx, fmt.Sprintf("capacity for %s did not all come: released the %d instances that did", p.res.Summary, len(ids)))
	return outcome{}, false, nil
}

// settleScaleUp waits for the acquisition in flight, if any (at once when its future is ready,
// as onScaledUp calls it; else when the epoch ended for another reason), and adds what it got
// to the held instances, for the next plan to use or release. ok is false when there was
// none or it failed.
func (j *job) settleScaleUp(ctx workflow.Context) (p *scaleUpProbe, got fleet.Result, ok bool) {
	p = j.scaleUp
	if p == nil {
		return nil, got, false
	}
	j.scaleUp = nil
	if err := p.fut.Get(ctx, &got); err != nil {
		j.event(ctx, "acquiring for a larger plan failed: "+err.Error())
		return p, got, false
	}
	j.remember(ctx, got, p.offers)
	return p, got, true
}
