package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner/profiles"
)

// v100Offers are p3.2xlarge offerings in three zones with the given free spot instances, and
// a p3.8xlarge offering with none (the shape the policy must not reason in).
func v100Offers(free map[string]int) []cloud.Offering {
	var out []cloud.Offering
	for _, z := range []string{"us-east-2b", "us-west-2a", "us-west-2c"} {
		out = append(out, cloud.Offering{Provider: "aws", Zone: z, InstanceType: "p3.2xlarge", GPUType: gpu.V100,
			GPUsPerInstance: 1, SpotPrice: 0.92, OnDemandPrice: 3.06, SpotCapacity: free[z]})
	}
	out = append(out, cloud.Offering{Provider: "aws", Zone: "us-east-2b", InstanceType: "p3.8xlarge", GPUType: gpu.V100,
		GPUsPerInstance: 4, SpotPrice: 3.67, OnDemandPrice: 12.24, SpotCapacity: 0})
	return out
}

func TestOffersMarketReasonsInTheShapeOnOffer(t *testing.T) {
	m, capacity, err := OffersMarket(v100Offers(map[string]int{"us-east-2b": 3, "us-west-2a": 1}), Placement{"us-east-2b": 2}, 0, 8)
	require.NoError(t, err)
	assert.Equal(t, "p3.2xlarge", m.InstanceType)
	assert.Equal(t, 1, m.GPUsPerInst)
	assert.Equal(t, []string{"us-east-2b", "us-west-2a", "us-west-2c"}, m.Zones)
	assert.Equal(t, 3.06, m.OnDemandPrice)
	assert.Equal(t, 5*time.Minute, m.Gap)
	assert.Equal(t, map[string]int{"us-east-2b": 5, "us-west-2a": 1, "us-west-2c": 0}, capacity, "free plus held")

	_, _, err = OffersMarket([]cloud.Offering{{Zone: "z", InstanceType: "x", OnDemandPrice: 1}}, nil, 0, 8)
	require.Error(t, err, "no spot price: nothing to decide on")
}

// The controller runs the simulator's policy: with spot to spare and time to the deadline it
// holds spot only; with no spot and the deadline near it buys on-demand and says why; what it
// remembers (the preemptions) comes back for the next decision.
func TestDecideRunningIsTheDeadlinePolicy(t *testing.T) {
	models, net, err := profiles.Bundled()
	require.NoError(t, err)
	m := models["OPT-350"]
	r := Running{Iterations: 6000, MaxGPUs: 8, Elapsed: time.Hour, Deadline: 24 * time.Hour, Every: 5 * time.Minute,
		Spot: Placement{"us-east-2b": 4}, Preempted: map[string]int{"us-west-2a": 2}}
	d, err := DecideRunning(r, v100Offers(map[string]int{"us-east-2b": 8, "us-west-2a": 8, "us-west-2c": 8}), DeadlineMemory{}, m, net, 32)
	require.NoError(t, err)
	assert.Positive(t, d.Request.Spot)
	assert.Zero(t, d.Request.OnDemand, "a day to go and spot to spare")
	assert.Equal(t, d.Request.Spot, d.Spot.GPUs(), "placed on the market as the simulator places it")
	assert.GreaterOrEqual(t, d.Spot["us-east-2b"], 4, "what is held is kept first")
	require.Len(t, d.Memory.Preemptions, 1, "two GPUs lost in one zone at one step are one preemption")
	assert.Equal(t, ZoneEvent{At: time.Hour, Zone: "us-west-2a"}, d.Memory.Preemptions[0])
	assert.Positive(t, d.OnDemandGPUs)

	late := r
	late.Elapsed, late.Done, late.Checkpointed = 20*time.Hour, 1000, 1000
	late.Spot, late.Preempted = Placement{}, map[string]int{"us-east-2b": 4}
	d2, err := DecideRunning(late, v100Offers(nil), d.Memory, m, net, 32)
	require.NoError(t, err)
	assert.Positive(t, d2.Request.OnDemand, "no spot, four hours left for 5000 iterations")
	assert.NotEmpty(t, d2.Request.Why)
	assert.Equal(t, d2.Request.OnDemand, d2.OnDemand.GPUs())
	assert.Len(t, d2.OnDemand, 1, "all in one zone")
	assert.Len(t, d2.Memory.Preemptions, 2, "the earlier preemption is remembered beside the new one")

	old := d2.Memory
	old.Preemptions = append([]ZoneEvent{{At: 0, Zone: "us-west-2c"}}, old.Preemptions...)
	p := resumeDeadlineAware(old)
	assert.Len(t, p.Memory(48*time.Hour).Preemptions, 0, "a day later nothing is worth remembering")

	_, err = DecideRunning(Running{}, v100Offers(nil), DeadlineMemory{}, m, net, 32)
	require.Error(t, err)
}

// With no spot capacity anywhere (a trace at zero), the policy still reasons in an instance
// type the job can hold: not an 8-GPU one (cheaper per GPU) under max_gpus 4, which left it
// no candidate at all and an empty request, so the job planned on nothing.
func TestOffersMarketWithoutSpotCapacityPicksAShapeTheJobCanHold(t *testing.T) {
	offers := v100Offers(nil)
	offers = append(offers, cloud.Offering{Provider: "aws", Zone: "us-east-2b", InstanceType: "p3.16xlarge", GPUType: gpu.V100,
		GPUsPerInstance: 8, SpotPrice: 7.0, OnDemandPrice: 24.48})
	m, _, err := OffersMarket(offers, nil, 0, 4)
	require.NoError(t, err)
	assert.Equal(t, "p3.2xlarge", m.InstanceType, "the smallest shape, within max_gpus")

	models, net, err := profiles.Bundled()
	require.NoError(t, err)
	r := Running{Iterations: 200, MaxGPUs: 4, Deadline: 40 * time.Minute, Every: 5 * time.Minute}
	d, err := DecideRunning(r, offers, DeadlineMemory{}, models["OPT-350"], net, 32)
	require.NoError(t, err)
	assert.Positive(t, d.Request.Spot+d.Request.OnDemand, "a request for something: %+v", d.Request)
	assert.Positive(t, d.OnDemand.GPUs(), "no spot anywhere and a deadline: on-demand")
}

// A decision says what one of its on-demand GPUs costs: the on-demand price of the shape the
// policy reasons in, in the zone it places them, per GPU; the job prices its purchases so.
func TestDecisionPricesItsOnDemandGPUs(t *testing.T) {
	models, net, err := profiles.Bundled()
	require.NoError(t, err)
	offers := v100Offers(nil)
	prices := map[string]float64{"us-east-2b": 3.06, "us-west-2a": 3.25, "us-west-2c": 3.5}
	for i := range offers {
		if offers[i].InstanceType == "p3.2xlarge" {
			offers[i].OnDemandPrice = prices[offers[i].Zone]
		}
	}
	r := Running{Iterations: 6000, MaxGPUs: 8, Elapsed: 20 * time.Hour, Deadline: 24 * time.Hour, Every: 5 * time.Minute,
		Done: 1000, Checkpointed: 1000}
	d, err := DecideRunning(r, offers, DeadlineMemory{}, models["OPT-350"], net, 32)
	require.NoError(t, err)
	require.Len(t, d.OnDemand, 1, "no spot, four hours left: on-demand in one zone")
	for z := range d.OnDemand {
		assert.Equal(t, prices[z], d.OnDemandUSDPerGPUHour, "the price in the zone the GPUs are placed in")
	}

	m := &Market{InstanceType: "p3.8xlarge", GPUsPerInst: 4, OnDemandPrice: 14}
	big := []cloud.Offering{{Zone: "a", InstanceType: "p3.8xlarge", OnDemandPrice: 12.24}, {Zone: "b", InstanceType: "p3.2xlarge", OnDemandPrice: 3}}
	assert.InDelta(t, 12.24/4, onDemandPerGPUHour(big, m, Placement{"a": 4}), 1e-12, "per GPU of a 4-GPU machine")
	assert.InDelta(t, 14.0/4, onDemandPerGPUHour(big, m, Placement{"b": 4}), 1e-12, "no offering of the shape there: the market's price")
	assert.InDelta(t, 14.0/4, onDemandPerGPUHour(big, m, nil), 1e-12)
}

// A job smaller than one machine of the market cannot run on it: the refusal says so in the
// spec's terms instead of the planner's "no whole machine".
func TestAJobSmallerThanOneMachineIsRefusedInItsOwnTerms(t *testing.T) {
	models, net, err := profiles.Bundled()
	require.NoError(t, err)
	traces := map[sim.Key]*sim.Trace{{Zone: "us-west-2a", InstanceType: "p3.16xlarge"}: {Unit: sim.Instances, Gap: time.Hour,
		Steps: []sim.Step{{Count: 1}}}}
	m, err := NewMarket("test", traces)
	require.NoError(t, err)
	tp := &PlannerThroughput{Model: models["OPT-350"], Network: net, GlobalBatch: 32, Market: m}
	err = tp.Check(1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at most 1 GPUs is less than one p3.16xlarge (8 GPUs a machine)")
	assert.NoError(t, tp.Check(8))
}
