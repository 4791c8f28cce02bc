package trainingact

import (
	"context"
	"fmt"
	"math"
	"sort"

	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/training"
)

// Error types of PlanJob, for the workflow to tell why nothing was planned.
const (
	// ErrTypeNoPlan: no plan fits the GPUs on offer (memory, batch or capacity).
	ErrTypeNoPlan = "NoPlan"
	// ErrTypeOverBudget: plans exist but every one costs more per hour than the cap.
	ErrTypeOverBudget = "OverBudget"
	// ErrTypeBadModel: the model cannot be profiled; the spec is wrong.
	ErrTypeBadModel = "BadModel"
)

// defaultAssumeInstances is the capacity assumed for an offering without a hint, as
// `schooner plan search --assume-instances` defaults it.
const defaultAssumeInstances = 4

// PlanJob runs the Sailor planner on the GPUs the job holds and those it may buy. It runs as
// a local activity: planning is pure computation, and the Replanner makes a replan with
// unchanged pools return at once. Failures are non-retryable: the workflow decides whether to
// wait for capacity or give up.
func (t *Control) PlanJob(ctx context.Context, req training.PlanJobRequest) (training.PlanJobResult, error) {
	m, n, err := t.model(req.Model, req.SeqLen)
	if err != nil {
		return training.PlanJobResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadModel, err)
	}
	survivors, offers := survivorPools(req.Survivors), offerPools(req)
	survivors, offers = capGPUs(survivors, offers, req.MaxGPUs)
	if len(survivors)+len(offers) == 0 {
		err := fmt.Errorf("planning %s: no GPUs on offer", m.Name)
		return training.PlanJobResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeNoPlan, err)
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
		return training.PlanJobResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeNoPlan, err)
	}
	best, ok := withinBudget(res, req.USDPerHourCap)
	if !ok {
		err := fmt.Errorf("planning %s: the best plan costs $%.2f/h, over the cap of $%.2f/h", m.Name, res.Best.Estimate.USDPerHour, req.USDPerHourCap)
		return training.PlanJobResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeOverBudget, err)
	}
	return training.PlanJobResult{
		Plan: best.Plan, Estimate: best.Estimate, Summary: planner.SummarizePlan(&best.Plan),
		ModelLayers: m.NumLayers(), Replicas: place(&best.Plan, append(survivors, offers...)),
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

// survivorPools groups held instances into pools priced as they were bought.
func survivorPools(insts []cloud.Instance) []planner.Pool {
	idx := map[string]int{}
	var out []planner.Pool
	for _, in := range insts {
		per := max(in.GPUs, 1)
		p := planner.Pool{Provider: in.Provider, Region: in.Region, Zone: in.Zone, InstanceType: in.InstanceType,
			GPU: in.GPUType, GPUsPerNode: per, USDPerGPUHour: in.PricePerHour / float64(per), Spot: in.Capacity != cloud.OnDemand}
		k := fmt.Sprintf("%s/%s/%s/%t/%g", p.Provider, p.Zone, p.InstanceType, p.Spot, p.USDPerGPUHour)
		if i, ok := idx[k]; ok {
			out[i].GPUs += per
			continue
		}
		p.GPUs = per
		idx[k] = len(out)
		out = append(out, p)
	}
	return out
}

// offerPools turns offerings into pools: spot from the capacity hint, on demand (when asked)
// with the assumed instance count.
func offerPools(req training.PlanJobRequest) []planner.Pool {
	assume := req.AssumeInstances
	if assume <= 0 {
		assume = defaultAssumeInstances
	}
	var out []planner.Pool
	for _, o := range req.Offers {
		per := max(o.GPUsPerInstance, 1)
		base := planner.Pool{Provider: o.Provider, Region: o.Region, Zone: o.Zone, InstanceType: o.InstanceType,
			GPU: o.GPUType, GPUsPerNode: per}
		if !req.SpotOff {
			n := assume
			if o.SpotCapacity >= 0 {
				n = o.SpotCapacity
			}
			if n > 0 && o.SpotPrice > 0 {
				p := base
				p.GPUs, p.USDPerGPUHour, p.Spot = n*per, o.SpotPrice/float64(per), true
				out = append(out, p)
			}
		}
		if req.OnDemand && o.OnDemandPrice > 0 {
			p := base
			p.GPUs, p.USDPerGPUHour = assume*per, o.OnDemandPrice/float64(per)
			out = append(out, p)
		}
	}
	return out
}

// capGPUs keeps at most maxGPUs GPUs, survivors first, then the cheapest offers.
func capGPUs(survivors, offers []planner.Pool, maxGPUs int) ([]planner.Pool, []planner.Pool) {
	if maxGPUs <= 0 {
		return survivors, offers
	}
	left := maxGPUs
	take := func(ps []planner.Pool) []planner.Pool {
		var out []planner.Pool
		for _, p := range ps {
			per := max(p.GPUsPerNode, 1)
			n := min(p.GPUs, left/per*per)
			if n <= 0 {
				continue
			}
			p.GPUs = n
			left -= n
			out = append(out, p)
		}
		return out
	}
	sorted := append([]planner.Pool(nil), offers...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].USDPerGPUHour < sorted[j].USDPerGPUHour })
	s := take(survivors)
	return s, take(sorted)
}

// place maps every replica of the plan to the offering its GPUs come from, telling spot from
// on demand by the pool the price came from (spot first when both match).
func place(p *planner.Plan, pools []planner.Pool) []training.PlannedReplica {
	capOf := func(r planner.Replica) cloud.CapacityType {
		found := cloud.CapacityType("")
		for _, pl := range pools {
			if pl.Zone != r.Zone || pl.InstanceType != r.InstanceType || pl.GPU != r.GPU ||
				math.Abs(pl.USDPerGPUHour-r.USDPerGPUHour) > 1e-9*math.Max(1, r.USDPerGPUHour) {
				continue
			}
			if pl.Spot {
				return cloud.Spot
			}
			found = cloud.OnDemand
		}
		if found == "" {
			return cloud.Spot
		}
		return found
	}
	dp := p.DP()
	var out []training.PlannedReplica
	for si, st := range p.Stages {
		for ri, r := range st.Replicas {
			out = append(out, training.PlannedReplica{
				Rank: si*dp + ri, Stage: si, Replica: ri, GPUs: r.TP, GPUsPerInstance: max(r.GPUsPerNode, 1),
				Key: cloud.OfferingKey{Capacity: capOf(r), InstanceType: r.InstanceType, Zone: r.Zone},
			})
		}
	}
	return out
}
