package bridge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

func TestOfferPoolsPricesSpotFromTheHintAndOnDemandFromTheAssumption(t *testing.T) {
	o := cloud.Offering{Provider: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "p3.8xlarge", GPUType: gpu.V100,
		GPUsPerInstance: 4, SpotPrice: 4, OnDemandPrice: 12.24, SpotCapacity: 3}
	spot := OfferPools([]cloud.Offering{o}, Pricing{Spot: true, AssumeInstances: 4})
	require.Len(t, spot, 1)
	assert.Equal(t, 12, spot[0].GPUs, "3 instances × 4 GPUs")
	assert.Equal(t, 1.0, spot[0].USDPerGPUHour)
	assert.Equal(t, 4, spot[0].GPUsPerNode)
	assert.True(t, spot[0].Spot)

	o.SpotCapacity = -1
	assert.Equal(t, 16, OfferPools([]cloud.Offering{o}, Pricing{Spot: true, AssumeInstances: 4})[0].GPUs, "unknown capacity: the assumption")
	assert.Equal(t, 4*DefaultAssumeInstances, OfferPools([]cloud.Offering{o}, Pricing{Spot: true})[0].GPUs, "0 assumes the default")

	od := OfferPools([]cloud.Offering{o}, Pricing{OnDemand: true, AssumeInstances: 4})
	require.Len(t, od, 1)
	assert.InDelta(t, 3.06, od[0].USDPerGPUHour, 1e-9)
	assert.False(t, od[0].Spot)

	both := OfferPools([]cloud.Offering{o}, Pricing{Spot: true, OnDemand: true})
	require.Len(t, both, 2, "one pool per capacity type")
	assert.NotEqual(t, both[0].Spot, both[1].Spot)

	o.SpotCapacity, o.SpotPrice = 0, 4
	assert.Empty(t, OfferPools([]cloud.Offering{o}, Pricing{Spot: true}), "no spot capacity, no pool")
	o.SpotCapacity, o.SpotPrice = 2, 0
	assert.Empty(t, OfferPools([]cloud.Offering{o}, Pricing{Spot: true}), "an offering without a spot price is not free")
}

func TestHeldPoolsGroupByOfferingAndCapacity(t *testing.T) {
	insts := []cloud.Instance{
		{ID: "a", Provider: "sim", Zone: "z", InstanceType: "p4", GPUType: gpu.A100_40, GPUs: 8, PricePerHour: 8, Capacity: cloud.Spot},
		{ID: "b", Provider: "sim", Zone: "z", InstanceType: "p4", GPUType: gpu.A100_40, GPUs: 8, PricePerHour: 8, Capacity: cloud.Spot},
		{ID: "c", Provider: "sim", Zone: "z", InstanceType: "p4", GPUType: gpu.A100_40, GPUs: 8, PricePerHour: 32, Capacity: cloud.OnDemand},
	}
	pools := HeldPools(insts)
	require.Len(t, pools, 2)
	assert.Equal(t, 16, pools[0].GPUs)
	assert.True(t, pools[0].Spot)
	assert.Equal(t, 8, pools[1].GPUs)
	assert.False(t, pools[1].Spot)
	assert.Equal(t, 4.0, pools[1].USDPerGPUHour)
}

func TestCapGPUsKeepsHeldFirstThenTheCheapestWholeInstances(t *testing.T) {
	held := []planner.Pool{{Zone: "h", GPUsPerNode: 2, GPUs: 4, USDPerGPUHour: 5}}
	offers := []planner.Pool{
		{Zone: "dear", GPUsPerNode: 4, GPUs: 8, USDPerGPUHour: 3},
		{Zone: "cheap", GPUsPerNode: 4, GPUs: 8, USDPerGPUHour: 1},
	}
	h, o := CapGPUs(held, offers, 10)
	require.Len(t, h, 1)
	assert.Equal(t, 4, h[0].GPUs)
	require.Len(t, o, 1, "6 GPUs left: one whole 4-GPU instance of the cheapest")
	assert.Equal(t, "cheap", o[0].Zone)
	assert.Equal(t, 4, o[0].GPUs)

	h, o = CapGPUs(held, offers, 0)
	assert.Equal(t, held, h)
	assert.Equal(t, offers, o, "0: no cap")
}

func TestCapPerPool(t *testing.T) {
	got := CapPerPool([]planner.Pool{{GPUsPerNode: 4, GPUs: 16}, {GPUsPerNode: 8, GPUs: 8}}, 6)
	require.Len(t, got, 1, "an 8-GPU instance does not fit a cap of 6")
	assert.Equal(t, 4, got[0].GPUs)
}

func TestTheCapacityTypeTravelsWithThePlan(t *testing.T) {
	models := &Models{}
	m, n, err := models.Profile(ModelRef{Name: "OPT-350"})
	require.NoError(t, err)
	again, _, err := models.Profile(ModelRef{Name: "OPT-350"})
	require.NoError(t, err)
	assert.Same(t, m, again, "one profile pointer per model, for the Replanner's cache")

	od := cloud.Offering{Provider: "sim", Zone: "z-od", InstanceType: "a1", GPUType: gpu.A100_40, GPUsPerInstance: 1,
		SpotPrice: 1, OnDemandPrice: 1.1, SpotCapacity: 0}
	res, err := planner.Search(planner.Request{Model: m, Network: n, GlobalBatch: 8, Objective: planner.MaxThroughput,
		Pools: OfferPools([]cloud.Offering{od}, Pricing{Spot: true, OnDemand: true})})
	require.NoError(t, err)
	for _, st := range res.Best.Plan.Stages {
		for _, r := range st.Replicas {
			assert.Equal(t, cloud.OnDemand, Capacity(r), "only on-demand capacity was offered")
		}
	}
}

func TestModelsBuildsAProfileFromDimensions(t *testing.T) {
	m, _, err := (&Models{}).Profile(ModelRef{Layers: 4, Hidden: 256, Heads: 4, FFN: 1024, Vocab: 1000})
	require.NoError(t, err)
	assert.Equal(t, "custom", m.Name)
	_, _, err = (&Models{}).Profile(ModelRef{Name: "no-such-model"})
	assert.ErrorContains(t, err, "no-such-model")
}

// The deadline policy's caps: per zone and capacity type, held pools first, in whole
// instances; a zone a set cap leaves out gets none; an unset cap limits nothing.
func TestCapByZone(t *testing.T) {
	pool := func(zone string, spot bool, gpus, per int) planner.Pool {
		return planner.Pool{Zone: zone, Spot: spot, GPUs: gpus, GPUsPerNode: per, GPU: gpu.V100}
	}
	held := []planner.Pool{pool("a", true, 2, 1)}
	offers := []planner.Pool{pool("a", true, 8, 4), pool("b", true, 4, 1), pool("a", false, 8, 1)}
	h, o := CapByZone(held, offers, map[string]int{"a": 7}, nil)
	assert.Equal(t, []planner.Pool{pool("a", true, 2, 1)}, h)
	assert.Equal(t, []planner.Pool{pool("a", true, 4, 4), pool("a", false, 8, 1)}, o,
		"5 spot GPUs left in a take one 4-GPU instance; b is not in the cap; on demand is not capped")

	_, o = CapByZone(nil, offers, nil, map[string]int{"a": 3})
	assert.Equal(t, []planner.Pool{pool("a", true, 8, 4), pool("b", true, 4, 1), pool("a", false, 3, 1)}, o)

	h, o = CapByZone(held, offers, nil, nil)
	assert.Equal(t, held, h)
	assert.Equal(t, offers, o)
}
