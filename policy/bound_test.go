package policy

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/planner/profiles"
)

// The job (720 iterations at 100 GPU-seconds each: 20 GPU-hours wherever they run) costs its
// GPU-hours at the cheapest price there is when it is: spot while spot lasts, on-demand for
// the rest, with the first restart (10 minutes) the only time lost.
func TestLowerBoundBuysTheCheapestGPUHoursInTheWindow(t *testing.T) {
	m := steps(t, map[string][]int{"us-east-2b": {4, 4, 4, 4, 4, 4, 4, 4, 4}})
	spot, od := m.SpotPrice["us-east-2b"], m.OnDemandPrice
	b := LowerBound(job(), m, 0, 8*time.Hour)
	require.True(t, b.Feasible)
	assert.InDelta(t, 20*spot, b.CostUSD, 1e-9)

	// No spot for the first 3 hours, 4 GPUs after: 3 h × 4 = 12 GPU-hours of spot by the
	// 6-hour deadline, the other 8 on-demand.
	m = steps(t, map[string][]int{"us-east-2b": {0, 0, 0, 4, 4, 4, 4}})
	b = LowerBound(job(), m, 0, 6*time.Hour)
	require.True(t, b.Feasible)
	assert.InDelta(t, 12*spot+8*od, b.CostUSD, 1e-9)

	// The same from hour 3 of the trace: spot all the way.
	b = LowerBound(job(), m, 3*time.Hour, 6*time.Hour)
	assert.InDelta(t, 20*spot, b.CostUSD, 1e-9)
}

// Four GPUs finish in 5 hours after the 10-minute start: a 5-hour deadline cannot be kept by
// anyone, 5 h 10 min can, on every GPU the whole time.
func TestLowerBoundSaysWhenNoPolicyCouldKeepTheDeadline(t *testing.T) {
	m := steps(t, map[string][]int{"us-east-2b": {0}})
	assert.False(t, LowerBound(job(), m, 0, 5*time.Hour).Feasible)
	b := LowerBound(job(), m, 0, 5*time.Hour+10*time.Minute)
	require.True(t, b.Feasible)
	assert.InDelta(t, 20*m.OnDemandPrice, b.CostUSD, 1e-6)
}

// With a throughput model where more GPUs are less efficient, the bound uses no more GPUs a
// step than the deadline needs: the hull puts the cheap, efficient sizes first.
func TestLowerBoundPrefersTheEfficientSizeWhenTheDeadlineAllows(t *testing.T) {
	m := steps(t, map[string][]int{"us-east-2b": {0}})
	j := job()
	j.Throughput = sublinear{}
	// 1 GPU: 100 s an iteration (20 h); 4 GPUs: 100/4^0.8 = 33 s (6.6 h), 1.3× the GPU-hours.
	loose := LowerBound(j, m, 0, 40*time.Hour)
	require.True(t, loose.Feasible)
	assert.InDelta(t, 20*m.OnDemandPrice, loose.CostUSD, 1e-6)
	tight := LowerBound(j, m, 0, 10*time.Hour)
	require.True(t, tight.Feasible)
	assert.Greater(t, tight.CostUSD, loose.CostUSD)
}

// No policy's run that keeps its deadline costs less than the bound of its start: checked
// for every policy from every start of a market with droughts.
func TestNoRunThatKeepsItsDeadlineCostsLessThanTheBound(t *testing.T) {
	m := cycling(t)
	j := job()
	j.Throughput = sublinear{}
	res, err := Eval(j, m, Grid{Starts: 9, Deadlines: []float64{1.2, 2}})
	require.NoError(t, err)
	require.Len(t, res.Bounds, 2)
	bound := map[[2]time.Duration]Bound{}
	for _, b := range res.BoundRuns {
		bound[[2]time.Duration{b.Start, b.Deadline}] = b
	}
	checked := 0
	for _, r := range res.Runs {
		b, ok := bound[[2]time.Duration{r.Start, r.Deadline}]
		require.True(t, ok)
		if r.Finished && r.Met {
			require.True(t, b.Feasible, "%s met a deadline the bound calls infeasible", r.Policy)
			assert.GreaterOrEqual(t, r.CostUSD, b.CostUSD*(1-1e-9), "%s from %v", r.Policy, r.Start)
			checked++
		}
	}
	assert.Greater(t, checked, 50)
	for _, s := range res.Bounds {
		assert.LessOrEqual(t, s.MedianRatio, s.P90Ratio+1e-12)
		assert.Less(t, s.MedianRatio, 1.0, "spot makes the bound cheaper than all on-demand")
	}
}

// sublinear scales as GPUs^0.8: 100 GPU-seconds an iteration on one GPU.
type sublinear struct{}

func (sublinear) IterSeconds(p Placement) float64 {
	n := p.GPUs()
	if n == 0 {
		return perfectScaling{}.IterSeconds(p)
	}
	return 100 / math.Pow(float64(n), 0.8)
}

// The bound takes the pace of n GPUs from one zone: on the bundled traces and the planner's
// model no placement of n GPUs spread over zones is faster (its links are slower). Were one
// faster, the bound could sit above a real run.
func TestNoPlacementSpreadOverZonesIsFasterThanOneZone(t *testing.T) {
	models, net, err := profiles.Bundled()
	require.NoError(t, err)
	m, _, err := LoadMarket("../cloud/sim/traces/aws-08-27-2023")
	require.NoError(t, err)
	j := Job{Iterations: 1, MaxGPUs: 8, Throughput: &PlannerThroughput{Model: models["OPT-350"], Network: net, GlobalBatch: 32, Market: m}}
	best := bestPaces(j.withDefaults(m), m)
	checked := 0
	for a := 0; a <= 8; a++ {
		for b := 0; a+b <= 8; b++ {
			for c := 0; a+b+c <= 8; c++ {
				p := Placement{m.Zones[0]: a, m.Zones[1]: b, m.Zones[2]: c}
				n := a + b + c
				if n == 0 || max(a, b, c) == n {
					continue
				}
				assert.GreaterOrEqual(t, j.Throughput.IterSeconds(p), best[n/m.GPUsPerInst]*(1-1e-9), "%v", p)
				checked++
			}
		}
	}
	assert.Greater(t, checked, 100)
}
