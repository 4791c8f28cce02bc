package trainingact

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/bridge"
	"github.com/schooner-ml/schooner/training"
)

// PlanJob runs the Sailor planner on the GPUs the job holds and those it may buy. It runs as
// a local activity: planning is pure computation, and the Replanner makes a replan with
// unchanged pools return at once. Failures are non-retryable: the workflow decides whether to
// wait for capacity or give up.
func (t *Control) PlanJob(ctx context.Context, req training.PlanJobRequest) (training.PlanJobResult, error) {
	m, n, err := t.model(req.Model, req.SeqLen)
	if err != nil {
		return training.PlanJobResult{}, err
	}
	pricing := bridge.Pricing{Spot: !req.SpotOff, OnDemand: req.OnDemand, AssumeInstances: req.AssumeInstances}
	held, offered := bridge.CapByZone(bridge.HeldPools(req.Survivors), bridge.OfferPools(req.Offers, pricing), req.SpotGPUs, req.OnDemandGPUs)
	preq := planner.Request{Model: m, Network: n, GlobalBatch: req.GlobalBatch, Objective: planner.Objective(req.Objective), TopK: 10}
	if preq.Objective == "" {
		preq.Objective = planner.MaxThroughput
	}
	// The planner ranks by the objective, not by price per hour; under a $/h cap, plan again
	// on fewer GPUs (in proportion to how far over the cap the best plan is) until one fits
	// or none can: a cap rules out the largest plans, not the job.
	maxGPUs, over := req.MaxGPUs, 0.0
	for {
		survivors, offers := bridge.CapGPUs(held, offered, maxGPUs)
		if len(survivors)+len(offers) == 0 {
			if over > 0 {
				return training.PlanJobResult{}, overBudget(m.Name, req.USDPerHourCap, over, nil)
			}
			err := fmt.Errorf("planning %s: no GPUs on offer", m.Name)
			return training.PlanJobResult{}, temporal.NewNonRetryableApplicationError(err.Error(), training.ErrTypeNoPlan, err)
		}
		res, err := t.plan(req.Current, survivors, offers, preq)
		res, err = t.uncrowded(res, err, held, offered, offers, maxGPUs, preq)
		if err != nil {
			if over > 0 {
				return training.PlanJobResult{}, overBudget(m.Name, req.USDPerHourCap, over, err)
			}
			if never := t.infeasible(req, preq, err); never != nil {
				return training.PlanJobResult{}, never
			}
			err = fmt.Errorf("planning %s on %d pools: %w", m.Name, len(survivors)+len(offers), err)
			return training.PlanJobResult{}, temporal.NewNonRetryableApplicationError(err.Error(), training.ErrTypeNoPlan, err)
		}
		best, ok := withinBudget(res, req.USDPerHourCap)
		if ok {
			return training.PlanJobResult{
				Plan: best.Plan, Estimate: best.Estimate, Summary: planner.SummarizePlan(&best.Plan),
				ModelLayers: m.NumLayers(), Replicas: place(&best.Plan),
			}, nil
		}
		cheapest := cheapestPerHour(res)
		over = cheapest.Estimate.USDPerHour
		gpus := cheapest.Plan.GPUs()
		maxGPUs = min(gpus-1, int(float64(gpus)*req.USDPerHourCap/over))
		if maxGPUs < 1 {
			return training.PlanJobResult{}, overBudget(m.Name, req.USDPerHourCap, over, nil)
		}
	}
}

// uncrowded guards against survivors crowding larger machines out of the GPU cap: the cap
// counts survivors first, so a 1-GPU survivor under max_gpus 8 leaves room for 7 and an 8-GPU
// instance never fits again. When the cap cut the offers because of survivors, it plans on the
// offers alone too and takes that plan when it is clearly better (a tenth, by the objective:
// dropping survivors costs a re-acquisition and a restart from the checkpoint).
func (t *Control) uncrowded(res *planner.Result, err error, held, offered, capped []planner.Pool, maxGPUs int, preq planner.Request) (*planner.Result, error) {
	if len(held) == 0 || maxGPUs <= 0 {
		return res, err
	}
	_, alone := bridge.CapGPUs(nil, offered, maxGPUs)
	if gpusOf(alone) <= gpusOf(capped) {
		return res, err
	}
	fresh, ferr := t.plan(nil, nil, alone, preq)
	switch {
	case ferr != nil:
		return res, err
	case err != nil || clearlyBetter(preq.Objective, fresh.Best.Estimate, res.Best.Estimate):
		return fresh, nil
	}
	return res, err
}

// clearlyBetter reports whether a beats b by a tenth on the objective.
func clearlyBetter(o planner.Objective, a, b planner.Estimate) bool {
	if o == planner.MinCost {
		return a.USDPerIteration < 0.9*b.USDPerIteration
	}
	return a.IterTime < 0.9*b.IterTime
}

func gpusOf(pools []planner.Pool) int {
	n := 0
	for _, p := range pools {
		n += p.GPUs
	}
	return n
}

// overBudget is the final error of a job whose cap rules out every plan, the smallest one's
// price named so the user knows what cap would do.
func overBudget(model string, cap, smallest float64, cause error) error {
	err := fmt.Errorf("planning %s: no plan costs at most the cap of $%.2f/h (the cheapest found costs $%.2f/h): raise budget.usd_per_hour", model, cap, smallest)
	if cause != nil {
		err = fmt.Errorf("%w (%w)", err, cause)
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), training.ErrTypeOverBudget, err)
}

// plan runs the Replanner: a fresh plan, or a replan that keeps what the job holds.
func (t *Control) plan(current *planner.Plan, survivors, offers []planner.Pool, preq planner.Request) (*planner.Result, error) {
	if len(survivors) == 0 && current == nil {
		preq.Pools = offers
		return t.rp.Plan(preq)
	}
	return t.rp.Replan(current, survivors, offers, preq)
}

// cheapestPerHour is the candidate of res that costs the least per hour.
func cheapestPerHour(res *planner.Result) planner.Candidate {
	best := res.Best
	for _, c := range res.Next {
		if c.Estimate.USDPerHour < best.Estimate.USDPerHour {
			best = c
		}
	}
	return best
}

// withinBudget picks the best candidate whose price per hour is under the cap (0: none).
func withinBudget(res *planner.Result, cap float64) (planner.Candidate, bool) {
	for _, c := range append([]planner.Candidate{res.Best}, res.Next...) {
		if cap <= 0 || c.Estimate.USDPerHour <= cap+1e-9 {
			return c, true
		}
	}
	return planner.Candidate{}, false
}

// place maps every replica of the plan to the offering its GPUs come from; the capacity
// type is the one of the pool the planner put it on.
func place(p *planner.Plan) []training.PlannedReplica {
	dp := p.DP()
	var out []training.PlannedReplica
	for si, st := range p.Stages {
		for ri, r := range st.Replicas {
			out = append(out, training.PlannedReplica{
				Rank: si*dp + ri, Stage: si, Replica: ri, GPUs: r.TP, GPUsPerInstance: max(r.GPUsPerNode, 1),
				Key: cloud.OfferingKey{Capacity: bridge.Capacity(r), InstanceType: r.InstanceType, Zone: r.Zone},
			})
		}
	}
	return out
}
