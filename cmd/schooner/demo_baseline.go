//go:build !agentonly

package main

import (
	"context"
	"fmt"

	"github.com/schooner-ml/schooner/activities/trainingact"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
)

// bestOnDemand is the cost a user compares spot against: the job run start to end on the
// best on-demand plan the planner finds over the same offerings, with nothing lost to
// preemptions, at the simulated market's prices. It plans exactly as the job's own planning
// activity does, with spot left out.
func bestOnDemand(ctx context.Context, provider cloud.Provider, spec training.Spec) (usd float64, plan string, err error) {
	ctl := &trainingact.Control{Provider: provider}
	offers, err := ctl.JobOfferings(ctx, training.JobOfferingsRequest{Resources: spec.Resources, Spot: spec.Spot})
	if err != nil {
		return 0, "", fmt.Errorf("best on-demand plan: listing offerings: %w", err)
	}
	maxGPUs := spec.Resources.MaxGPUs
	if maxGPUs <= 0 {
		maxGPUs = training.DefaultLimits.MaxGPUs
	}
	res, err := ctl.PlanJob(ctx, training.PlanJobRequest{Model: spec.Model, SeqLen: spec.SeqLen, GlobalBatch: spec.GlobalBatch,
		Objective: spec.Objective, USDPerHourCap: spec.Budget.USDPerHour, MaxGPUs: maxGPUs, Offers: offers,
		OnDemand: true, SpotOff: true})
	if err != nil {
		return 0, "", fmt.Errorf("best on-demand plan: %w", err)
	}
	hours := float64(spec.Iterations) * res.Estimate.IterTime / 3600
	return hours * res.Estimate.USDPerHour, fmt.Sprintf("%s, %.3f s/iter, $%.2f/h", res.Summary, res.Estimate.IterTime, res.Estimate.USDPerHour), nil
}
