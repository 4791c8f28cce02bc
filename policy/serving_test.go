package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func serve2(length time.Duration) Serving {
	return Serving{Stages: 2, Length: length}
}

func TestServingOnAmpleSpotCostsTheSpotPriceAndIsDownOnlyAtTheStart(t *testing.T) {
	m := steps(t, map[string][]int{"us-east-2b": {4}, "us-west-2a": {4}})
	run, err := SimulateServing(m, serve2(10*time.Hour), ServeSpotAware, 0)
	require.NoError(t, err)
	assert.Zero(t, run.Preemptions)
	assert.Zero(t, run.OnDemandHours)
	billed := (10*time.Hour - 2*time.Minute).Hours()
	assert.InDelta(t, (m.SpotPrice["us-east-2b"]+m.SpotPrice["us-west-2a"])*billed, run.CostUSD, 1e-9)
	assert.InDelta(t, 2*billed, run.SpotHours, 1e-9)
	assert.InDelta(t, run.CostUSD, run.SpotUSD, 1e-9, "every machine was spot")
	assert.InDelta(t, 2*m.OnDemandPrice*billed, run.OnDemandUSD, 1e-9)
	assert.Equal(t, 2*time.Minute+30*time.Second, run.Down, "boot and start-up")

	od, err := SimulateServing(m, serve2(10*time.Hour), ServeOnDemand, 0)
	require.NoError(t, err)
	assert.InDelta(t, 1, od.Ratio, 1e-9, "the on-demand policy is the baseline")
}

func TestSpotAwareFallsBackToOnDemandInADroughtAndReturnsToSpot(t *testing.T) {
	// No spot anywhere for 2 hours, then room for both stages in one zone.
	m := steps(t, map[string][]int{"us-east-2b": {0, 0, 2}, "us-west-2a": {0}})
	aware, err := SimulateServing(m, serve2(6*time.Hour), ServeSpotAware, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, aware.Returns)
	// Each on-demand machine runs from its boot to the spot one's readiness: 2 h 30 s.
	assert.InDelta(t, 2*(2*time.Hour+30*time.Second).Hours(), aware.OnDemandHours, 1e-9)
	assert.Equal(t, 2*time.Minute+30*time.Second, aware.Down, "serving from the start, on demand")
	assert.InDelta(t, m.OnDemandPrice*aware.OnDemandHours, aware.CostUSD-aware.SpotUSD, 1e-9, "the rest is the on-demand machines'")
	assert.InDelta(t, aware.SpotUSD, m.SpotPrice["us-east-2b"]*aware.SpotHours, 1e-9)
	assert.Greater(t, aware.SpotHours, 0.0)

	restart, err := SimulateServing(m, serve2(6*time.Hour), ServeRestartOnly, 0)
	require.NoError(t, err)
	assert.Zero(t, restart.OnDemandHours)
	assert.Equal(t, 2*time.Hour+2*time.Minute+30*time.Second, restart.Down, "nothing until spot returns")
	assert.Less(t, restart.CostUSD, aware.CostUSD)
}

func TestANoticeBuysTheReplacementEarlyAndRestartOnlyWaitsForSpot(t *testing.T) {
	// One instance per zone; zone us-east-2b is taken at hour 2 and stays dry.
	m := steps(t, map[string][]int{"us-east-2b": {1, 1, 0}, "us-west-2a": {1}})
	aware, err := SimulateServing(m, serve2(4*time.Hour), ServeSpotAware, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, aware.Preemptions)
	// Bought at the notice (2 min ahead), running at the loss, ready 30 s after it; the
	// other zone is full, so it is on demand.
	assert.Equal(t, 2*time.Minute+30*time.Second+30*time.Second, aware.Down)
	assert.InDelta(t, (2 * time.Hour).Hours(), aware.OnDemandHours, 1e-9)

	restart, err := SimulateServing(m, serve2(4*time.Hour), ServeRestartOnly, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, restart.Preemptions)
	assert.Equal(t, 2*time.Minute+30*time.Second+2*time.Hour, restart.Down, "no spot room: down to the end")
	assert.Less(t, restart.Available, aware.Available)
}

func TestSimulateServingRefusesBadInput(t *testing.T) {
	m := steps(t, map[string][]int{"us-east-2b": {1}})
	_, err := SimulateServing(m, serve2(time.Hour), "cheapest", 0)
	assert.ErrorContains(t, err, `unknown serving policy "cheapest"`)
	_, err = SimulateServing(m, Serving{Length: time.Hour}, ServeSpotAware, 0)
	assert.ErrorContains(t, err, "needs stages")
}
