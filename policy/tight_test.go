package policy

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud/sim"
)

// A deadline of 1.2x the job's spot-only run (6 h for 5 h 10 min on four spot GPUs): a
// preemption at any step could still be recovered on on-demand GPUs, so the job starts on
// spot. The safety net used to ask for a restart and a step more than the rushed finish,
// without crediting the step's progress, and bought on-demand from the first step.
func TestATightDeadlineStartsOnSpotWhileAPreemptionCouldStillBeRecovered(t *testing.T) {
	m := steps(t, map[string][]int{"us-east-2b": {4}})
	run, err := Simulate(job(), m, DeadlineAware(), 0, Options{Deadline: 6 * time.Hour})
	require.NoError(t, err)
	assert.True(t, run.Met, "finished at %s", run.Duration)
	assert.Empty(t, run.Purchases, "no on-demand with spot all the way")
	assert.Zero(t, run.OnDemandUSD)
}

// The same job loses all its spot after the first hour: the on-demand finish bought then
// still keeps the deadline, and the whole run costs less than on-demand from the start.
func TestATightDeadlineRecoversAPreemptionOnOnDemand(t *testing.T) {
	m := steps(t, map[string][]int{"us-east-2b": {4, 0}})
	deadline := 6 * time.Hour
	run, err := Simulate(job(), m, DeadlineAware(), 0, Options{Deadline: deadline})
	require.NoError(t, err)
	assert.True(t, run.Met, "finished at %s", run.Duration)
	require.Len(t, run.Purchases, 1)
	assert.Equal(t, time.Hour, run.Purchases[0].At)
	assert.Equal(t, 4, run.Purchases[0].GPUs)
	assert.Less(t, run.CostUSD, BestOnDemand(job(), m, deadline).CostUSD)
}

// tableScaling gives the seconds an iteration takes on each number of GPUs held.
type tableScaling map[int]float64

func (s tableScaling) IterSeconds(p Placement) float64 {
	if v, ok := s[p.GPUs()]; ok {
		return v
	}
	return math.Inf(1)
}

// everyFiveMinutes is a market of one zone of p3.2xlarge whose spot capacity is count at
// every 5-minute tick for a day.
func everyFiveMinutes(t *testing.T, count int) *Market {
	t.Helper()
	tr := &sim.Trace{Source: "us-east-2b", Unit: sim.Instances, Gap: 5 * time.Minute}
	for i := range 24 * 12 {
		tr.Steps = append(tr.Steps, sim.Step{At: time.Duration(i) * 5 * time.Minute, Count: count})
	}
	m, err := NewMarket("test", map[sim.Key]*sim.Trace{{Zone: "us-east-2b", InstanceType: "p3.2xlarge"}: tr})
	require.NoError(t, err)
	return m
}

// With no spot and a deadline that leaves no margin, the job buys the cheapest on-demand
// placement that keeps the deadline: three GPUs (6 h 58 min with the start) where four are
// barely faster (6 h 46 min) and a third dearer per iteration. It used to buy the fastest.
func TestWithNoMarginTheJobBuysTheCheapestPlacementThatKeepsTheDeadline(t *testing.T) {
	j := job()
	j.Throughput = tableScaling{1: 100, 2: 50, 3: 34, 4: 33}
	m := everyFiveMinutes(t, 0)
	run, err := Simulate(j, m, DeadlineAware(), 0, Options{Deadline: 7*time.Hour + 5*time.Minute})
	require.NoError(t, err)
	assert.True(t, run.Met, "finished at %s", run.Duration)
	require.NotEmpty(t, run.Purchases)
	assert.Equal(t, 3, run.Purchases[0].GPUs, "%+v", run.Purchases)
	assert.Len(t, run.Purchases, 1, "held to the end: %+v", run.Purchases)
	assert.Less(t, run.GPUHours, 4*720*33.0/3600, "four GPUs were never held")
}

// A preemption that takes one of four spot GPUs an hour in: the three survivors relaunch
// (a restart) before they train again, so the step after it trains nothing. With 4 h 23 min
// left for 600 iterations (4 h 10 min on four on-demand GPUs, plus a 10-minute restart), a
// preemption at the end of that step could no longer be recovered: the safety net buys the
// on-demand finish at once. It used to credit the survivors with a step of training and
// bought it a step too late, missing the deadline.
func TestThePreemptionsStepTrainsNothingWhenTheSafetyNetLooksAhead(t *testing.T) {
	tr := &sim.Trace{Source: "us-east-2b", Unit: sim.Instances, Gap: 5 * time.Minute}
	for i := range 24 * 12 {
		tr.Steps = append(tr.Steps, sim.Step{At: time.Duration(i) * 5 * time.Minute, Count: map[bool]int{true: 4, false: 3}[i < 12]})
	}
	m, err := NewMarket("test", map[sim.Key]*sim.Trace{{Zone: "us-east-2b", InstanceType: "p3.2xlarge"}: tr})
	require.NoError(t, err)
	run, err := Simulate(job(), m, DeadlineAware(), 0, Options{Deadline: 323 * time.Minute})
	require.NoError(t, err)
	assert.True(t, run.Met, "finished at %s: %+v", run.Duration, run.Purchases)
	require.NotEmpty(t, run.Purchases)
	assert.Equal(t, time.Hour, run.Purchases[0].At, "%+v", run.Purchases)
}
