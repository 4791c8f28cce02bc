package main

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/training"
)

// The demo's on-demand baseline is the job on its best on-demand plan: its iterations at the
// plan's pace and price, planned with spot left out.
func TestBestOnDemandIsTheJobOnItsBestOnDemandPlan(t *testing.T) {
	t.Parallel()
	spec, err := demoSpec(&demoFlags{}, "file:///tmp/unused", io.Discard)
	require.NoError(t, err)
	m, err := newSimMarket(1, 1)
	require.NoError(t, err)
	usd, plan, err := bestOnDemand(context.Background(), m, spec)
	require.NoError(t, err)
	assert.Greater(t, usd, 0.0)
	assert.Contains(t, plan, "s/iter")

	half := spec
	half.Iterations = spec.Iterations / 2
	usdHalf, _, err := bestOnDemand(context.Background(), m, half)
	require.NoError(t, err)
	assert.InDelta(t, usd/2, usdHalf, usd*1e-9, "the cost is the iterations at the plan's pace and price")

	capped := spec
	capped.Budget = training.Budget{USDPerHour: 0.01}
	_, _, err = bestOnDemand(context.Background(), m, capped)
	require.Error(t, err, "a cap no on-demand plan meets has no baseline")
}
