package trainingwf

import (
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
)

// versionBestOnDemand: the job prices itself on its best on-demand plan at its first plan
// (the BestOnDemand local activity) and keeps it in its status, the baseline of its savings;
// runs recorded before had none.
const versionBestOnDemand = "best-on-demand-baseline"

// priceBaseline asks, once per job, what the whole job would cost on its best on-demand plan
// over offers (training.BestOnDemandRequest): at the first plan, on the market as the job
// finds it before it takes any of it. A run continued as new carries the answer in its
// status; one that has none (a job started before, or one whose question failed) asks at its
// next plan. A failure is noted and changes nothing else: the baseline is for the user, no
// decision of the job reads it.
func (j *job) priceBaseline(ctx workflow.Context, offers []cloud.Offering) {
	if j.baselineAsked || j.status.BestOnDemandCostUSD > 0 {
		return
	}
	j.baselineAsked = true
	if workflow.GetVersion(ctx, versionBestOnDemand, workflow.DefaultVersion, 1) != 1 {
		return
	}
	spec := j.spec
	spec.Budget = j.status.Budget
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3},
		Summary: "price " + j.spec.Name + " on its best on-demand plan",
	})
	var b training.OnDemandBaseline
	if err := workflow.ExecuteLocalActivity(lctx, training.ActivityBestOnDemand, training.BestOnDemandFor(spec, j.maxGPUs(), slices.Clone(offers))).Get(ctx, &b); err != nil {
		j.event(ctx, "no best on-demand plan to measure the cost against: "+err.Error())
		return
	}
	j.status.BestOnDemandCostUSD, j.status.BestOnDemandPlan = b.CostUSD, b.Plan
}
