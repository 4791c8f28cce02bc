package trainingwf

import (
	"fmt"
	"maps"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/policy"
	"github.com/schooner-ml/schooner/training"
)

// A spot-with-fallback job with a deadline takes its spot decisions from schooner's deadline
// policy, the code `schooner policy eval` simulates (package policy): before every plan, every
// training.PolicyEvery while it trains and at every retry while it waits for capacity, the
// DecideSpot local activity tells it how many spot GPUs to hold in which zones and how many
// on-demand GPUs where, and why; the job plans within those caps. It replans on a decision
// only when the on-demand GPUs it asks for change (buying or dropping on-demand capacity is
// what the deadline needs; more spot comes through the look for returned capacity, which
// plans within the same caps). Runs recorded before, and jobs without a deadline, keep
// SpotStrategy's checks.

// deadlinePolicyVersion gates the policy.
const deadlinePolicyVersion = "deadline-policy"

// usesPolicy reports whether this job's spot decisions come from the deadline policy. The
// version is asked once per run, at the first decision point, so replays ask it there too.
func (j *job) usesPolicy(ctx workflow.Context) bool {
	if j.spec.Spot != training.SpotWithFallback || j.strategy.Deadline.IsZero() {
		return false
	}
	if !j.policyAsked {
		j.policyAsked = true
		j.policyOn = workflow.GetVersion(ctx, deadlinePolicyVersion, workflow.DefaultVersion, 1) == 1
	}
	return j.policyOn
}

// decide runs the policy on offers and adopts its caps for the plans to come. It returns the
// decision and whether its on-demand GPUs differ from both the previous decision's and what
// is held (then the running plan no longer follows the policy).
func (j *job) decide(ctx workflow.Context, offers []cloud.Offering) (training.SpotDecision, bool, error) {
	now := workflow.Now(ctx)
	j.lastDecision = now
	spot, od := j.heldGPUs()
	run := policy.Running{Iterations: j.status.Iterations, MaxGPUs: j.maxGPUs(),
		Done: float64(j.status.Iteration), Checkpointed: float64(max(j.status.LastCheckpoint, 0)),
		Elapsed: j.scale.Sim(now.Sub(j.status.StartedAt)), Deadline: j.scale.Sim(j.strategy.Deadline.Sub(j.status.StartedAt)),
		Every: training.PolicyEvery, Spot: spot, OnDemand: od, Preempted: j.lostSince,
		Restarting: j.status.Phase != training.PhaseTraining, SpentUSD: j.status.CostUSD}
	req := training.SpotDecisionRequest{Model: j.spec.Model, SeqLen: j.spec.SeqLen, GlobalBatch: j.spec.GlobalBatch,
		Running: run, Offers: offers, Memory: j.policyMem}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3},
		Summary: "deadline policy for " + j.spec.Name,
	})
	var d training.SpotDecision
	if err := workflow.ExecuteLocalActivity(lctx, training.ActivityDecideSpot, req).Get(ctx, &d); err != nil {
		return d, false, fmt.Errorf("deciding on spot and on-demand capacity: %w", err)
	}
	j.policyMem, j.lostSince = d.Memory, nil
	prev := 0
	if j.policyReq != nil {
		prev = j.policyReq.OnDemand.GPUs()
	}
	want := d.OnDemand.GPUs()
	changed := want != prev && want != od.GPUs()
	if want > prev {
		// The price comes with the decision (a local activity's recorded result): a decision
		// recorded before the policy said it replays with none, and nothing else reads it.
		j.status.OnDemandPurchases = append(j.status.OnDemandPurchases, training.OnDemandPurchase{
			At: now, GPUs: want - prev, Zones: d.OnDemand, Why: d.Request.Why,
			USDPerHour: float64(want-prev) * d.OnDemandUSDPerGPUHour})
		j.event(ctx, fmt.Sprintf("deadline policy: %d on-demand GPUs (%s)", want, d.Request.Why))
	} else if want < prev {
		j.event(ctx, fmt.Sprintf("deadline policy: back to %d on-demand GPUs", want))
	}
	j.policyReq = &d
	j.strategy.OnDemand = want > 0
	return d, changed, nil
}

// policyDue reports whether a training job under the policy should decide again.
func (j *job) policyDue(ctx workflow.Context) bool {
	if !j.usesPolicy(ctx) || j.plan == nil {
		return false
	}
	return !workflow.Now(ctx).Before(j.lastDecision.Add(j.scale.Wall(training.PolicyEvery)))
}

// policyCheck is the poll's decision: it replans (reason "deadline") when the on-demand GPUs
// the policy asks for changed. A decision that fails is noted and the job trains on.
func (j *job) policyCheck(ctx workflow.Context) (outcome, bool) {
	if _, changed := j.decideOnOffers(ctx); changed {
		return outcome{kind: outReplan, reason: "deadline"}, true
	}
	return outcome{}, false
}

// decideOnOffers lists the offerings and decides on them (decide); a failure of either is
// noted and changes nothing.
func (j *job) decideOnOffers(ctx workflow.Context) (training.SpotDecision, bool) {
	offers, err := j.offerings(ctx)
	if err != nil {
		j.event(ctx, err.Error())
		return training.SpotDecision{}, false
	}
	d, changed, err := j.decide(ctx, offers)
	if err != nil {
		j.event(ctx, err.Error())
		return d, false
	}
	return d, changed
}

// policyCaps are the per-zone caps of the current decision for a plan request (nil maps: no
// decision yet, no caps).
func (j *job) policyCaps() (spot, onDemand map[string]int) {
	if j.policyReq == nil {
		return nil, nil
	}
	return placementMap(j.policyReq.Spot), placementMap(j.policyReq.OnDemand)
}

// placementMap is p as a non-nil map (an empty placement caps to nothing).
func placementMap(p policy.Placement) map[string]int {
	if out := maps.Clone(map[string]int(p)); out != nil {
		return out
	}
	return map[string]int{}
}

// heldGPUs are the GPUs of the held instances per zone, spot and on demand, as the policy
// should count them: an instance under a preemption notice is left out, as the next plan
// leaves it out (planWith). Counted, it made its zone look like capacity the job still had,
// so the policy kept placing spot GPUs there that no plan could use, and the job waited with
// GPUs on offer elsewhere until its provider took the instance.
func (j *job) heldGPUs() (spot, onDemand policy.Placement) {
	spot, onDemand = policy.Placement{}, policy.Placement{}
	for _, in := range j.held {
		if in.State.Gone() || j.noticed[in.ID] {
			continue
		}
		if capOf(in) == cloud.OnDemand {
			onDemand[in.Zone] += max(in.GPUs, 1)
		} else {
			spot[in.Zone] += max(in.GPUs, 1)
		}
	}
	return spot, onDemand
}

// policyWhileWaiting is the decision of a job that found no plan and waits for capacity: it
// reports whether the policy now asks for on-demand GPUs it did not hold, in which case the
// job plans again at once instead of waiting (a waiting job makes no progress, so only the
// policy can tell it the deadline is slipping).
func (j *job) policyWhileWaiting(ctx workflow.Context) bool {
	d, changed := j.decideOnOffers(ctx)
	return changed && d.OnDemand.GPUs() > 0
}
