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
		return training.PlanJobResult{}, temporal.NewNonRetryableApplicationError(err.Error(), training.ErrTypeBadModel, err)
	}
	pricing := bridge.Pricing{Spot: !req.SpotOff, OnDemand: req.OnDemand, AssumeInstances: req.AssumeInstances}
	survivors, offers := bridge.CapGPUs(bridge.HeldPools(req.Survivors), bridge.OfferPools(req.Offers, pricing), req.MaxGPUs)
	if len(survivors)+len(offers) == 0 {
		err := fmt.Errorf("planning %s: no GPUs on offer", m.Name)
		return training.PlanJobResult{}, temporal.NewNonRetryableApplicationError(err.Error(), training.ErrTypeNoPlan, err)
	}
	preq := planner.Request{Model: m, Network: n, GlobalBatch: req.GlobalBatch, Objective: planner.Objective(req.Objective), TopK: 10}
	if preq.Objective == "" {
		preq.Objective = planner.MaxThroughput
	}
	var res *planner.Result
	if len(survivors) == 0 && req.Current == nil {
		preq.Pools = offers
		res, err = t.rp.Plan(preq)
	} else {
		res, err = t.rp.Replan(req.Current, survivors, offers, preq)
	}
	if err != nil {
		err = fmt.Errorf("planning %s on %d pools: %w", m.Name, len(survivors)+len(offers), err)
		return training.PlanJobResult{}, temporal.NewNonRetryableApplicationError(err.Error(), training.ErrTypeNoPlan, err)
	}
	best, ok := withinBudget(res, req.USDPerHourCap)
	if !ok {
		err := fmt.Errorf("planning %s: the best plan costs $%.2f/h, over the cap of $%.2f/h", m.Name, res.Best.Estimate.USDPerHour, req.USDPerHourCap)
		return training.PlanJobResult{}, temporal.NewNonRetryableApplicationError(err.Error(), training.ErrTypeOverBudget, err)
	}
	return training.PlanJobResult{
		Plan: best.Plan, Estimate: best.Estimate, Summary: planner.SummarizePlan(&best.Plan),
		ModelLayers: m.NumLayers(), Replicas: place(&best.Plan),
	}, nil
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
