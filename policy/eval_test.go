package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEvalRunsEveryPolicyFromEveryStartAndSummarises(t *testing.T) {
	m := cycling(t)
	g := Grid{Starts: 7, Deadlines: []float64{1.5, 3}}
	res, err := Eval(job(), m, g)
	require.NoError(t, err)
	assert.Len(t, res.Starts, 7)
	assert.Len(t, res.Runs, 7*2*len(Makers()))
	require.Len(t, res.Summaries, 2*len(Makers()))
	for _, s := range res.Summaries {
		assert.Equal(t, 7, s.Runs)
		assert.LessOrEqual(t, s.MedianRatio, s.P90Ratio+1e-9)
		if s.Policy == "all-on-demand" {
			assert.InDelta(t, 1, s.MedianRatio, 1e-9)
			assert.Equal(t, 1.0, s.Attainment)
		}
		if s.Policy == "schooner-deadline" {
			assert.Equal(t, 1.0, s.Attainment, "deadline %v", s.Deadline)
			assert.Less(t, s.MedianRatio, 1.0)
		}
	}
	again, err := Eval(job(), m, g)
	require.NoError(t, err)
	assert.Equal(t, res.Summaries, again.Summaries, "runs are deterministic")
}

func TestQuantile(t *testing.T) {
	assert.Equal(t, 2.0, quantile([]float64{1, 2, 3}, 0.5))
	assert.InDelta(t, 3.6, quantile([]float64{0, 1, 2, 3, 4}, 0.9), 1e-9)
	assert.Zero(t, quantile(nil, 0.5))
}

// A run stopped at its limit with iterations left did not do the job: its bill is not a cost
// of the job, so the quantiles are over the runs that finished, and a policy none of whose
// runs finished has no cost at all (it showed 0.00, the cheapest of the table).
func TestSummariesLeaveUnfinishedRunsOutOfTheCost(t *testing.T) {
	base := OnDemandPlan{CostUSD: 100}
	runs := []Run{{Finished: true, Met: true, CostUSD: 40}, {Finished: true, CostUSD: 60}, {CostUSD: 1}, {CostUSD: 0}}
	s := summarise("p", 1.5, runs, base)
	assert.Equal(t, 2, s.CostRuns)
	assert.Equal(t, 2, s.Unfinished)
	assert.InDelta(t, 0.5, s.MedianRatio, 1e-9)
	assert.InDelta(t, 0.58, s.P90Ratio, 1e-9)
	assert.InDelta(t, 0.25, s.Attainment, 1e-9)

	none := summarise("q", 1.5, []Run{{CostUSD: 0}, {CostUSD: 3}}, base)
	assert.Zero(t, none.CostRuns)
	assert.Zero(t, none.MedianRatio)
	assert.Equal(t, 2, none.Unfinished)
}
