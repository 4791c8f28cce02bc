package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/planner/profiles"
)

// A job the deadline policy moved onto on-demand GPUs keeps on-demand GPUs while spot alone
// cannot keep the deadline (none on offer, or too little), and drops them for spot alone once
// a spot placement that keeps the deadline is on offer again: on-demand progress costs three
// times spot progress.
func TestDecideRunningReturnsToSpotOnceSpotKeepsTheDeadline(t *testing.T) {
	models, net, err := profiles.Bundled()
	require.NoError(t, err)
	m := models["OPT-350"]
	// 4000 iterations to go in 6 hours, on 4 on-demand GPUs.
	r := Running{Iterations: 6000, MaxGPUs: 8, Elapsed: 8 * time.Hour, Deadline: 14 * time.Hour, Every: 5 * time.Minute,
		Done: 2000, Checkpointed: 2000, OnDemand: Placement{"us-east-2b": 4}}
	mem := DeadlineMemory{}
	for _, c := range []struct {
		free map[string]int
		what string
	}{{nil, "no spot on offer"}, {map[string]int{"us-west-2a": 1}, "one spot GPU, too few to keep the deadline"}} {
		d, err := DecideRunning(r, v100Offers(c.free), mem, m, net, 32)
		require.NoError(t, err)
		assert.Positive(t, d.Request.OnDemand, "%s: on-demand GPUs stay (%+v)", c.what, d.Request)
		assert.NotEmpty(t, d.Request.Why, c.what)
		mem = d.Memory
	}

	back, err := DecideRunning(r, v100Offers(map[string]int{"us-east-2b": 8, "us-west-2a": 8, "us-west-2c": 8}), mem, m, net, 32)
	require.NoError(t, err)
	assert.Zero(t, back.Request.OnDemand, "spot that keeps the deadline is on offer again: back to spot alone (%+v)", back.Request)
	assert.Zero(t, back.OnDemand.GPUs())
	assert.Positive(t, back.Request.Spot)
	assert.Equal(t, back.Request.Spot, back.Spot.GPUs())
	assert.False(t, back.Memory.Critical, "the safety net did not fire")
}

// A preemption that takes all eight of a job's GPUs in one zone is one preemption of that
// zone, not eight: counted per GPU, the spot runtimes it inflates (2% each) came out 16% long,
// and a job on on-demand GPUs stayed there for an hour after spot that keeps the deadline came
// back (the bundled trace's 6000-iteration job, 9.8 h in, at 1.2× its spot-only duration).
func TestOnePreemptionOfAWholeZoneDoesNotHoldTheJobOnDemand(t *testing.T) {
	models, net, err := profiles.Bundled()
	require.NoError(t, err)
	m := models["OPT-350"]
	r := Running{Iterations: 6000, MaxGPUs: 8, Elapsed: time.Hour, Deadline: 7*time.Hour + 18*time.Minute,
		Every: 5 * time.Minute, Done: 1000, Checkpointed: 1000, Preempted: map[string]int{"us-east-2b": 8}}
	lost, err := DecideRunning(r, v100Offers(nil), DeadlineMemory{}, m, net, 32)
	require.NoError(t, err)
	require.Positive(t, lost.Request.OnDemand, "no spot anywhere: on-demand keeps the deadline (%+v)", lost.Request)
	require.Len(t, lost.Memory.Preemptions, 1)

	r.Elapsed += 5 * time.Minute
	r.Preempted, r.OnDemand = nil, lost.OnDemand
	back, err := DecideRunning(r, v100Offers(map[string]int{"us-east-2b": 8}), lost.Memory, m, net, 32)
	require.NoError(t, err)
	assert.Zero(t, back.Request.OnDemand, "spot that keeps the deadline is back in the zone (%+v)", back.Request)
	assert.Equal(t, 8, back.Spot["us-east-2b"])
}

// While spot is short the policy may wait on the spot there is for spot to come back, until
// only the fastest on-demand placement could still keep the deadline; it waits only while that
// rushed finish, added to what the job has paid, stays within the best on-demand plan's bill.
// The same job, the same market, 2000 iterations to go: having paid $20 it waits on its one
// spot GPU; having paid $100 of the $126 the on-demand plan costs, it buys on-demand now (the
// efficient placement), where waiting and then rushing on eight GPUs ($52 more) would bill
// more than on-demand from the start.
func TestThePolicyWaitsForSpotOnlyWhileARushedFinishStaysWithinTheOnDemandBill(t *testing.T) {
	models, net, err := profiles.Bundled()
	require.NoError(t, err)
	m := models["OPT-350"]
	r := Running{Iterations: 6000, MaxGPUs: 8, Elapsed: 8 * time.Hour, Deadline: 12*time.Hour + 42*time.Minute,
		Every: 5 * time.Minute, Done: 4000, Checkpointed: 4000, Spot: Placement{"us-east-2b": 1}}
	offers := v100Offers(map[string]int{"us-east-2b": 1})

	r.SpentUSD = 20
	waits, err := DecideRunning(r, offers, DeadlineMemory{}, m, net, 32)
	require.NoError(t, err)
	assert.Zero(t, waits.Request.OnDemand, "little paid: wait on spot (%+v)", waits.Request)

	r.SpentUSD = 100
	buys, err := DecideRunning(r, offers, DeadlineMemory{}, m, net, 32)
	require.NoError(t, err)
	assert.Positive(t, buys.Request.OnDemand, "most of the on-demand bill paid: buy now (%+v)", buys.Request)
	assert.Less(t, buys.Request.OnDemand+buys.Request.Spot, 8, "the efficient placement, not the rushed one")
}

// A job far from its deadline waits for spot whatever the fastest finish would cost: the demo's
// 600 iterations with 22 hours to go can still finish on two on-demand GPUs, well within the
// on-demand bill, so losing its spot buys nothing yet (checking only the fastest, eight-GPU
// finish bought on-demand at once and cost the bundled trace's 178 h start a third more).
func TestAJobFarFromItsDeadlineWaitsForSpotEvenWhenARushedFinishWouldBeDear(t *testing.T) {
	models, net, err := profiles.Bundled()
	require.NoError(t, err)
	r := Running{Iterations: 600, MaxGPUs: 8, Elapsed: 75 * time.Minute, Deadline: 24 * time.Hour, Every: 5 * time.Minute,
		Done: 107, Checkpointed: 107, Preempted: map[string]int{"us-east-2b": 4}, SpentUSD: 0.85}
	d, err := DecideRunning(r, v100Offers(nil), DeadlineMemory{}, models["OPT-350"], net, 32)
	require.NoError(t, err)
	assert.Zero(t, d.Request.OnDemand, "22 hours to go: wait for spot (%+v)", d.Request)
}

// The rushed on-demand finish that a deferral must keep within the baseline's bill is billed as
// the baseline is, without its machines' boot: a finish that costs exactly the bill left once
// the boot is taken out is affordable, one a cent dearer is not.
func TestADeferralBillsTheRushedFinishWithoutItsBoot(t *testing.T) {
	m := &Market{GPUsPerInst: 1, OnDemandPrice: 3, Gap: time.Hour}
	v := &View{Job: Job{Restart: 10 * time.Minute, Boot: 4 * time.Minute}, Market: m,
		Baseline: OnDemandPlan{GPUs: 4, CostUSD: 100}, SpentUSD: 40}
	after := 5*time.Hour + v.Job.Boot // 4 GPUs × $3 × 5 h billed = $60: the bill left
	d := &deadlineAware{}
	assert.True(t, d.affordable(v, option{}, 4, after), "$40 paid + $60 billed is the $100 bill")
	v.SpentUSD += 0.01
	assert.False(t, d.affordable(v, option{}, 4, after), "a cent more is past it")
}
