package trainingact

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/activities/internal/acttest"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
)

// The baseline is the job on its best on-demand plan: its iterations at the plan's pace and
// price, planned as PlanJob plans with spot left out.
func TestBestOnDemandIsTheJobOnItsBestOnDemandPlan(t *testing.T) {
	t.Parallel()
	tr := &Control{}
	spec := training.Spec{Model: training.Model{Name: "OPT-350"}, GlobalBatch: 64, Iterations: 1000}
	req := training.BestOnDemandFor(spec, 4, acttest.Offers())
	got, err := tr.BestOnDemand(context.Background(), req)
	require.NoError(t, err)
	plan, err := tr.PlanJob(context.Background(), req.PlanRequest())
	require.NoError(t, err)
	for _, r := range plan.Replicas {
		assert.Equal(t, cloud.OnDemand, r.Key.Capacity, "spot is left out")
	}
	assert.InDelta(t, 1000*plan.Estimate.IterTime/3600*plan.Estimate.USDPerHour, got.CostUSD, 1e-9)
	assert.Equal(t, plan.Estimate.USDPerHour, got.USDPerHour)
	assert.Contains(t, got.Plan, "s/iter")

	half := spec
	half.Iterations = spec.Iterations / 2
	gotHalf, err := tr.BestOnDemand(context.Background(), training.BestOnDemandFor(half, 4, acttest.Offers()))
	require.NoError(t, err)
	assert.InDelta(t, got.CostUSD/2, gotHalf.CostUSD, got.CostUSD*1e-9, "the cost is the iterations at the plan's pace and price")

	capped := spec
	capped.Budget = training.Budget{USDPerHour: 0.01}
	_, err = tr.BestOnDemand(context.Background(), training.BestOnDemandFor(capped, 4, acttest.Offers()))
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "a cap no on-demand plan meets has no baseline")
	assert.Equal(t, training.ErrTypeOverBudget, app.Type())
}
