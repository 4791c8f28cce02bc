package policy

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud/sim"
)

func TestFillKeepsHeldGPUsThenTakesFreeCapacityInOrder(t *testing.T) {
	capacity := map[string]int{"a": 3, "b": 4, "c": 8}
	got := fill(Request{Spot: 6, Zones: []string{"a", "b", "c"}}, Placement{"b": 2}, capacity)
	assert.Equal(t, Placement{"a": 3, "b": 3}, got)
	// A zone left out of the request is released.
	got = fill(Request{Spot: 2, Zones: []string{"c"}}, Placement{"b": 2}, capacity)
	assert.Equal(t, Placement{"c": 2}, got)
}

func TestFillPlacesAGangInOneZoneOrNowhere(t *testing.T) {
	capacity := map[string]int{"a": 3, "b": 4, "c": 8}
	assert.Equal(t, Placement{"c": 8}, fill(Request{Spot: 8, Zones: []string{"a", "b", "c"}, Gang: true}, nil, capacity))
	assert.Empty(t, fill(Request{Spot: 9, Zones: []string{"a", "b", "c"}, Gang: true}, nil, capacity))
	// A gang that lost a member is relaunched whole, not kept.
	assert.Equal(t, Placement{"b": 4}, fill(Request{Spot: 4, Zones: []string{"a", "b"}, Gang: true}, Placement{"a": 3}, capacity))
}

func TestAllOnDemandCostsWhatTheBaselineSays(t *testing.T) {
	m := steps(t, map[string][]int{"us-east-2b": {0}, "us-west-2a": {0}})
	deadline := 8 * time.Hour
	base := BestOnDemand(job(), m, deadline)
	// 2 GPUs take 10 h (too long), 3 take 6 h 40 min; 4 take 5 h and cost more GPU-hours
	// of restart: the cheapest plan in time is 3 GPUs.
	require.Equal(t, 3, base.GPUs)
	assert.Equal(t, 6*time.Hour+50*time.Minute, base.Duration.Round(time.Minute))
	run, err := Simulate(job(), m, AllOnDemand(), 0, Options{Deadline: deadline})
	require.NoError(t, err)
	assert.True(t, run.Finished && run.Met)
	assert.InDelta(t, base.CostUSD, run.CostUSD, 1e-6)
	assert.InDelta(t, run.CostUSD, run.OnDemandUSD, 1e-9)
	assert.Equal(t, base.Duration, run.Duration)
	require.Len(t, run.Purchases, 1)
	assert.Equal(t, 3, run.Purchases[0].GPUs)
}

func TestAPreemptionRedoesTheIterationsSinceTheLastCheckpointWhenNoticesAreIgnored(t *testing.T) {
	// 4 spot GPUs for 2 hours, then none for 3, then 4 again.
	m := steps(t, map[string][]int{"us-east-2b": {4, 4, 0, 0, 0, 4}})
	j := job()
	j.IgnoresNotice = true
	run, err := Simulate(j, m, AllSpot(), 0, Options{})
	require.NoError(t, err)
	assert.True(t, run.Finished)
	assert.Equal(t, 1, run.Preemptions)
	// 2 h less a 10-minute restart at 25 s an iteration is 264 iterations; the last
	// checkpoint (every 36) was at 252.
	assert.InDelta(t, 12, run.Lost, 1e-6)
	assert.Zero(t, run.OnDemandUSD)
	// Restart, 264 iterations, 3 h without capacity, restart, 456+12 iterations.
	want := 2*time.Hour + 3*time.Hour + 10*time.Minute + time.Duration(468*25)*time.Second
	assert.Equal(t, want, run.Duration)
}

func TestAJobThatSavesOnTheNoticeLosesNothingToAPreemption(t *testing.T) {
	m := steps(t, map[string][]int{"us-east-2b": {4, 4, 0, 0, 0, 4}})
	run, err := Simulate(job(), m, AllSpot(), 0, Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, run.Preemptions)
	assert.Zero(t, run.Lost)
	// Restart, 264 iterations, 3 h without capacity, restart, the other 456.
	assert.Equal(t, 2*time.Hour+3*time.Hour+10*time.Minute+time.Duration(456*25)*time.Second, run.Duration)
}

func TestMachinesAreBilledFromTheEndOfTheirBootAndSurvivorsRelaunchWithoutOne(t *testing.T) {
	// 4 spot GPUs for 2 hours, then 2: the survivors go on alone.
	m := steps(t, map[string][]int{"us-east-2b": {4, 4, 2}})
	run, err := Simulate(job(), m, AllSpot(), 0, Options{})
	require.NoError(t, err)
	require.True(t, run.Finished)
	boot := sim.DefaultParams("aws").BootTime
	require.Equal(t, 2*time.Minute, boot)
	// 264 iterations on 4 GPUs after a 10-minute start; the survivors relaunch in 10 minutes
	// less the boot (nothing to boot) and train the other 456 at 50 s each.
	relaunch := 10*time.Minute - boot
	assert.Equal(t, 2*time.Hour+relaunch+time.Duration(456*50)*time.Second, run.Duration)
	assert.Equal(t, 2, run.Restarts)
	// The four machines are billed from the end of their boot, the two survivors to the end.
	price := m.SpotPrice["us-east-2b"]
	want := price * (2*(2*time.Hour-boot).Hours() + 2*(run.Duration-boot).Hours())
	assert.InDelta(t, want, run.CostUSD, 1e-9)
	// Ignoring the boot would bill 4 machine-minutes more.
	assert.Greater(t, price*(2*(2*time.Hour).Hours()+2*run.Duration.Hours())-want, 0.06*price)
}

func TestTheDeadlinePolicyBuysOnDemandOnlyWhenSpotCannotKeepTheDeadline(t *testing.T) {
	// Spot runs dry after 2 hours for the rest of the trace.
	m := steps(t, map[string][]int{"us-east-2b": {4, 4, 0}, "us-west-2a": {0}})
	deadline := 9 * time.Hour
	spot, err := Simulate(job(), m, AllSpot(), 0, Options{Deadline: deadline})
	require.NoError(t, err)
	assert.False(t, spot.Finished, "all-spot waits for capacity that never returns")
	run, err := Simulate(job(), m, DeadlineAware(), 0, Options{Deadline: deadline})
	require.NoError(t, err)
	assert.True(t, run.Met, "finished at %s", run.Duration)
	require.NotEmpty(t, run.Purchases)
	assert.GreaterOrEqual(t, run.Purchases[0].At, 2*time.Hour, "no on-demand while spot was there")
	assert.NotEmpty(t, run.Purchases[0].Why)
	base := BestOnDemand(job(), m, deadline)
	assert.Less(t, run.CostUSD, base.CostUSD)
}

func TestWithAmpleSpotTheDeadlinePolicyBanksTimeOnSpotAndNeverRestartsForNothing(t *testing.T) {
	m := steps(t, map[string][]int{"us-east-2b": {8}})
	run, err := Simulate(job(), m, DeadlineAware(), 0, Options{Deadline: 24 * time.Hour})
	require.NoError(t, err)
	assert.True(t, run.Met)
	assert.Zero(t, run.OnDemandUSD)
	assert.Equal(t, 1, run.Restarts, "what it holds still fits: no change near the end")
	// With perfect scaling a larger placement costs only the GPU-minutes of its restart
	// more, well within the speed premium: the job runs on max_gpus (4) for 5 h after a
	// 10-minute start.
	assert.InDelta(t, 4*(5+1.0/6), run.GPUHours, 0.01)
}

func TestSkyPilotEagerNextRegionTriesAnotherRegionFirst(t *testing.T) {
	s := &skyPilot{eager: true, zone: "us-east-2b"}
	zones := []string{"us-east-2a", "us-east-2b", "us-west-2a", "us-west-2c"}
	assert.Equal(t, []string{"us-west-2a", "us-west-2c", "us-east-2a", "us-east-2b"}, s.order(zones))
	f := &skyPilot{zone: "us-west-2a"}
	assert.Equal(t, []string{"us-west-2a", "us-east-2a", "us-east-2b", "us-west-2c"}, f.order(zones))
}

// atLeastTwo is perfect scaling on two GPUs or more: the model does not fit on one.
type atLeastTwo struct{ perfectScaling }

func (a atLeastTwo) IterSeconds(p Placement) float64 {
	if p.GPUs() < 2 {
		return math.Inf(1)
	}
	return a.perfectScaling.IterSeconds(p)
}

func TestTheSafetyNetNeverPicksAPlacementNothingFitsOn(t *testing.T) {
	m := steps(t, map[string][]int{"us-east-2b": {0}})
	j := job()
	j.Throughput = atLeastTwo{}
	// 4 GPUs take 5 h and a 10-minute start: only they keep a 5 h 15 min deadline, and
	// with no room for another restart the safety net buys them at once.
	run, err := Simulate(j, m, DeadlineAware(), 0, Options{Deadline: 5*time.Hour + 15*time.Minute})
	require.NoError(t, err)
	assert.True(t, run.Met, "finished at %s", run.Duration)
	require.Len(t, run.Purchases, 1)
	assert.Equal(t, 4, run.Purchases[0].GPUs)
	assert.Contains(t, run.Purchases[0].Why, "safety net")
}
