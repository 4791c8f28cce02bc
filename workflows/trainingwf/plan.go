package trainingwf

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workflows/internal/jobwf"
)

// errNoPlan wraps a planning round that found nothing to run on; the loop waits and tries
// again, since spot capacity comes back.
var errNoPlan = errors.New("no plan")

// planAndAcquire is the heart of a (re)plan: offerings → plan → acquire what the plan lacks
// through the Fleet child → if short, plan again with what was obtained → release what the
// final plan does not use. It leaves j.plan and j.placement set.
func (j *job) planAndAcquire(ctx workflow.Context, reason string) error {
	j.setPhase(ctx, training.PhasePlanning)
	offers, err := j.offerings(ctx)
	if err != nil {
		return err
	}
	j.allOffers = offers
	j.priceBaseline(ctx, offers)
	if j.usesPolicy(ctx) {
		if _, _, err := j.decide(ctx, offers); err != nil {
			j.event(ctx, err.Error()+": planning without the policy's caps")
		}
	}
	for round := 0; ; round++ {
		last := round >= j.opts.MaxAcquireRounds
		usable := []cloud.Offering{}
		if !last {
			usable = j.strategy.Usable(offers, workflow.Now(ctx))
		}
		res, err := j.planOnce(ctx, usable)
		if err != nil {
			return err
		}
		place, groups := assign(res.Replicas, j.assignable(ctx))
		if len(groups) == 0 {
			j.commit(ctx, res, place, reason)
			return j.releaseUnused(ctx)
		}
		if last {
			return fmt.Errorf("%w: the plan on held instances still lacks %d groups", errNoPlan, len(groups))
		}
		if err := j.affords(res); err != nil {
			return err
		}
		j.setPhase(ctx, training.PhaseAcquiring)
		got, err := j.fleet(ctx, groups, round)
		if err != nil {
			return err
		}
		j.remember(ctx, got, offers)
		if got.Short > 0 {
			reason = "capacity"
		}
	}
}

// versionAssignSkipsNoticed: a plan's ranks are not placed on held instances under a
// preemption notice; runs recorded before placed them there.
const versionAssignSkipsNoticed = "assign-skips-noticed"

// assignable are the held instances a plan's ranks may be placed on. Those under a preemption
// notice are left out, as planWith leaves them out of the plan: a plan in their zone and shape
// otherwise put ranks back on them, the job found one gone a moment after it launched, and
// replanned again (four replans restoring one step in a simulated minute on the bundled trace
// at 178 h). Left unused, they are released with the plan's other spare machines.
func (j *job) assignable(ctx workflow.Context) []cloud.Instance {
	if workflow.GetVersion(ctx, versionAssignSkipsNoticed, workflow.DefaultVersion, 1) != 1 {
		return j.held
	}
	return slices.DeleteFunc(slices.Clone(j.held), func(in cloud.Instance) bool { return j.noticed[in.ID] })
}

// offerings runs the JobOfferings activity: what the job's resources allow, priced, with
// the capacity each offering has now.
func (j *job) offerings(ctx workflow.Context) ([]cloud.Offering, error) {
	var offers []cloud.Offering
	if err := workflow.ExecuteActivity(jobwf.ControlCtx(ctx, "list offerings for "+j.spec.Name, time.Minute),
		training.ActivityJobOfferings, training.JobOfferingsRequest{Resources: j.spec.Resources, Spot: j.spec.Spot}).Get(ctx, &offers); err != nil {
		return nil, fmt.Errorf("listing offerings: %w", err)
	}
	return offers, nil
}

// planOnce runs the PlanJob local activity on the held instances and the given offers, and
// records the plan's pace with the strategy.
func (j *job) planOnce(ctx workflow.Context, offers []cloud.Offering) (training.PlanJobResult, error) {
	res, err := j.planWith(ctx, offers)
	if err == nil {
		j.strategy.Planned(res.Estimate.IterTime)
	}
	return res, err
}

// planWith runs the PlanJob local activity on the held instances and the given offers.
func (j *job) planWith(ctx workflow.Context, offers []cloud.Offering) (training.PlanJobResult, error) {
	// Dropping on-demand capacity: on-demand survivors are left out of the plan and released
	// by releaseUnused. So are instances under a preemption notice: kept, each would force
	// another replan restoring the same step once its provider takes it (one notice per
	// instance of a zone made as many replans). Runs recorded before keep them.
	dropNoticed := workflow.GetVersion(ctx, "replan-drops-noticed", workflow.DefaultVersion, 1) == 1
	var survivors []cloud.Instance
	for _, in := range j.held {
		if j.strategy.KeepsSurvivor(capOf(in)) && !(dropNoticed && j.noticed[in.ID]) {
			survivors = append(survivors, in)
		}
	}
	req := training.PlanJobRequest{Model: j.spec.Model, SeqLen: j.spec.SeqLen, GlobalBatch: j.spec.GlobalBatch,
		Objective: j.spec.Objective, USDPerHourCap: j.status.Budget.USDPerHour, MaxGPUs: j.maxGPUs(),
		Survivors: survivors, Offers: offers, OnDemand: j.strategy.BuysOnDemand(), SpotOff: j.strategy.SpotOff()}
	if j.plan != nil {
		req.Current = &j.plan.Plan
	}
	req.SpotGPUs, req.OnDemandGPUs = j.policyCaps()
	req.AllOffers = j.allOffers
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3},
		Summary: fmt.Sprintf("plan %s on %d held instances and %d offerings", j.spec.Name, len(j.held), len(offers)),
	})
	var res training.PlanJobResult
	if err := workflow.ExecuteLocalActivity(lctx, training.ActivityPlanJob, req).Get(ctx, &res); err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) && (app.Type() == training.ErrTypeBadModel || app.Type() == training.ErrTypeOverBudget ||
			app.Type() == training.ErrTypeInfeasible) {
			// The spec rules out every plan: waiting for capacity would not help.
			return res, fmt.Errorf("planning: %w", err)
		}
		return res, fmt.Errorf("%w: %w", errNoPlan, err)
	}
	return res, nil
}

// fleet runs the Fleet child workflow for the groups the plan lacks.
func (j *job) fleet(ctx workflow.Context, groups []fleet.Group, round int) (fleet.Result, error) {
	info := workflow.GetInfo(ctx)
	return jobwf.Fleet(ctx, fmt.Sprintf("%s-fleet-%d-%d-%d", j.id, info.Attempt, len(j.status.Plans), round),
		fleet.Input{JobID: j.id, Groups: groups, Token: fmt.Sprintf("%s-%s-%d-%d", j.id, info.WorkflowExecution.RunID, len(j.status.Plans), round)})
}

// remember adds what the fleet got to the held instances, takes the spot instances it got
// off their offerings' capacity (the offerings were listed before this round: without that,
// the next round would plan on capacity the job itself now holds, come up short and mark the
// offering unavailable) and marks the short offerings unavailable for the TTL, in workflow
// time.
func (j *job) remember(ctx workflow.Context, got fleet.Result, offers []cloud.Offering) {
	now := workflow.Now(ctx)
	for _, in := range got.Instances {
		j.held = append(j.held, in)
		for i := range offers {
			o := &offers[i]
			if o.Zone != in.Zone || o.InstanceType != in.InstanceType {
				continue
			}
			j.odPrice[in.ID] = o.OnDemandPrice
			if capOf(in) == cloud.Spot && o.SpotCapacity > 0 {
				o.SpotCapacity--
			}
		}
	}
	j.strategy.Short(got.Unavailable, now)
	j.event(ctx, fmt.Sprintf("acquired %d instances (%d short)", len(got.Instances), got.Short))
}

// commit makes res the running plan and records it in the plan history.
func (j *job) commit(ctx workflow.Context, res training.PlanJobResult, place []training.RankPlacement, reason string) {
	if len(j.status.Plans) > 0 {
		j.status.Replans++
	}
	j.plan = &res
	j.placement = place
	j.lastScaleCheck = workflow.Now(ctx)
	j.modelLayers = res.ModelLayers
	ids := []string{}
	seen := map[string]bool{}
	for _, p := range place {
		if !seen[p.InstanceID] {
			seen[p.InstanceID] = true
			ids = append(ids, p.InstanceID)
		}
	}
	j.status.Plans = append(j.status.Plans, training.PlanRecord{Epoch: j.status.Epoch + 1, At: workflow.Now(ctx), Reason: reason,
		Summary: res.Summary, Plan: res.Plan, Estimate: res.Estimate, Instances: ids, FromStep: j.status.LastCheckpoint})
	j.event(ctx, "plan ("+reason+"): "+res.Summary)
}

// releaseUnused terminates held instances the running plan does not use.
func (j *job) releaseUnused(ctx workflow.Context) error {
	used := map[string]bool{}
	for _, p := range j.placement {
		used[p.InstanceID] = true
	}
	var drop []string
	for _, in := range j.held {
		if !used[in.ID] {
			drop = append(drop, in.ID)
		}
	}
	if len(drop) == 0 {
		return nil
	}
	if err := j.release(ctx, drop); err != nil {
		return err
	}
	j.held = slices.DeleteFunc(j.held, func(in cloud.Instance) bool { return !used[in.ID] })
	j.event(ctx, fmt.Sprintf("released %d instances the plan does not use", len(drop)))
	return nil
}

// release runs ReleaseInstances (idempotent, retried).
func (j *job) release(ctx workflow.Context, ids []string) error {
	return jobwf.Release(ctx, j.id, ids)
}

// usesOnDemand reports whether any held instance is on demand.
func (j *job) usesOnDemand() bool {
	for _, in := range j.held {
		if in.Capacity == cloud.OnDemand {
			return true
		}
	}
	return false
}

// maxGPUs is the job's cap on GPUs held at once: the spec's, or the control plane's limit
// when the spec sets none.
func (j *job) maxGPUs() int {
	if n := j.spec.Resources.MaxGPUs; n > 0 {
		return n
	}
	return j.limits.MaxGPUs
}

// minimumBilling is what buying an instance costs at the least: providers bill a minute.
const minimumBilling = time.Minute

// affords refuses to buy for a plan when what is left of the total budget cannot pay for the
// plan's minimum billing: a budget of a few cents must not be spent on machines that are
// released at once.
func (j *job) affords(res training.PlanJobResult) error {
	total := j.status.Budget.TotalUSD
	if total <= 0 {
		return nil
	}
	need := res.Estimate.USDPerHour * minimumBilling.Hours()
	if left := total - j.status.CostUSD; need > left {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("total budget of $%.4g leaves $%.4g, less than a minute of the plan (%s) costs ($%.4g at $%.2f/h): nothing bought",
				total, max(left, 0), res.Summary, need, res.Estimate.USDPerHour), "BudgetExhausted", nil)
	}
	return nil
}

// lastPace is the iteration time of the running (or last) plan, else of the last spot-only
// plan; 0 when the job has never planned.
func (j *job) lastPace() float64 {
	if j.plan != nil {
		return j.plan.Estimate.IterTime
	}
	return j.strategy.SpotIterSeconds
}
