package serving

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
)

func offer(zone, typ string, spot, od float64, capacity int) cloud.Offering {
	return cloud.Offering{Provider: "sim", Zone: zone, InstanceType: typ, GPUType: "V100-16", GPUsPerInstance: 1,
		SpotPrice: spot, OnDemandPrice: od, SpotCapacity: capacity}
}

func slots(replicas, stages int) []Slot {
	var out []Slot
	for r := range replicas {
		for s := range stages {
			out = append(out, Slot{Replica: r, Stage: s})
		}
	}
	return out
}

func zonesOf(p Placement) []string {
	var out []string
	for _, s := range p.Stages {
		out = append(out, s.Key.Zone)
	}
	return out
}

func TestPlaceSpreadsAReplicasStagesOverZonesThenTakesTheCheapest(t *testing.T) {
	offers := []cloud.Offering{offer("z-b", "v1", 1.5, 3, 8), offer("z-a", "v1", 1, 3, 8), offer("z-c", "v1", 2, 3, 8)}
	p := Place(PlacementRequest{Offers: offers, Spot: fleet.SpotOnly, Need: slots(2, 2)})
	require.Empty(t, p.Unplaced)
	assert.Equal(t, []string{"z-a", "z-b", "z-a", "z-b"}, zonesOf(p),
		"each replica's two stages in two zones, the cheapest two")
	for _, s := range p.Stages {
		assert.Equal(t, cloud.Spot, s.Key.Capacity)
	}
	g := p.Groups()
	require.Len(t, g, 2)
	assert.Equal(t, fleet.Group{Key: cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: "v1", Zone: "z-a"}, Count: 2}, g[0])
}

func TestPlaceStacksAZoneOnlyWhenNoOtherIsThere(t *testing.T) {
	p := Place(PlacementRequest{Offers: []cloud.Offering{offer("z-a", "v1", 1, 3, 8)}, Spot: fleet.SpotOnly, Need: slots(1, 3)})
	require.Empty(t, p.Unplaced)
	assert.Equal(t, []string{"z-a", "z-a", "z-a"}, zonesOf(p))
}

func TestPlaceCountsTheZonesOfHeldStages(t *testing.T) {
	offers := []cloud.Offering{offer("z-a", "v1", 1, 3, 8), offer("z-b", "v1", 1.5, 3, 8)}
	p := Place(PlacementRequest{Offers: offers, Spot: fleet.SpotOnly, Need: []Slot{{Replica: 0, Stage: 1}},
		Held: []ZoneUse{{Slot: Slot{Replica: 0, Stage: 0}, Zone: "z-a"}}})
	assert.Equal(t, []string{"z-b"}, zonesOf(p), "the replacement goes where the replica's other stage is not")
}

func TestPlaceLeavesOutAvoidedZonesAndShortOfferings(t *testing.T) {
	now := time.Unix(1000, 0)
	offers := []cloud.Offering{offer("z-a", "v1", 1, 3, 8), offer("z-b", "v1", 1.5, 3, 8), offer("z-c", "v1", 2, 3, 8)}
	var avoided, unavailable cloud.ExpirySet
	avoided.Add(cloud.OfferingKey{Zone: "z-a"}, now.Add(time.Minute))
	unavailable.Add(cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: "v1", Zone: "z-b"}, now.Add(time.Minute))
	p := Place(PlacementRequest{Offers: offers, Spot: fleet.SpotOnly, Need: slots(1, 1), Avoided: avoided, Unavailable: unavailable, Now: now})
	assert.Equal(t, []string{"z-c"}, zonesOf(p))
	p = Place(PlacementRequest{Offers: offers, Spot: fleet.SpotOnly, Need: slots(1, 1), Avoided: avoided, Unavailable: unavailable,
		Now: now.Add(time.Minute)})
	assert.Equal(t, []string{"z-a"}, zonesOf(p), "entries expire")
}

func TestPlaceFallsBackToOnDemandOnlyWhenThePolicyAllows(t *testing.T) {
	offers := []cloud.Offering{offer("z-a", "v1", 1, 3, 1), offer("z-b", "v1", 1, 2.5, 0)}
	p := Place(PlacementRequest{Offers: offers, Spot: fleet.SpotOnly, Need: slots(1, 2)})
	assert.Equal(t, []string{"z-a"}, zonesOf(p))
	assert.Equal(t, []Slot{{Replica: 0, Stage: 1}}, p.Unplaced, "spot only: the second stage waits for capacity")

	p = Place(PlacementRequest{Offers: offers, Spot: fleet.SpotWithFallback, Need: slots(1, 2)})
	require.Empty(t, p.Unplaced)
	assert.Equal(t, cloud.Spot, p.Stages[0].Key.Capacity)
	assert.Equal(t, cloud.OnDemand, p.Stages[1].Key.Capacity, "spot is short: on demand")
	assert.Equal(t, "z-b", p.Stages[1].Key.Zone, "the cheaper on-demand offering in another zone")
	assert.Equal(t, 2.5, p.Stages[1].PricePerHour)

	p = Place(PlacementRequest{Offers: offers, Spot: fleet.OnDemandOnly, Need: slots(1, 2)})
	require.Empty(t, p.Unplaced)
	for _, s := range p.Stages {
		assert.Equal(t, cloud.OnDemand, s.Key.Capacity)
	}
}

func TestPlaceKeepsASpotOnlySlotOffOnDemandUnderTheFallbackPolicy(t *testing.T) {
	offers := []cloud.Offering{offer("z-a", "v1", 1, 3, 1), offer("z-b", "v1", 1, 2.5, 0)}
	back := Slot{Replica: 0, Stage: 1}
	// The first stage takes the one spot machine; the stage moving back to spot gets none.
	p := Place(PlacementRequest{Offers: offers, Spot: fleet.SpotWithFallback, Need: slots(1, 2), SpotOnly: []Slot{back}})
	assert.Equal(t, []Slot{back}, p.Unplaced)
	require.Len(t, p.Stages, 1)
	assert.Equal(t, cloud.Spot, p.Stages[0].Key.Capacity)
	// Alone, it takes the spot machine.
	p = Place(PlacementRequest{Offers: offers, Spot: fleet.SpotWithFallback, Need: []Slot{back}, SpotOnly: []Slot{back}})
	require.Len(t, p.Stages, 1)
	assert.Equal(t, cloud.Spot, p.Stages[0].Key.Capacity)
}

func TestPlaceAssumesCapacityWithoutAHintAndFiltersGPUTypes(t *testing.T) {
	h := offer("z-h", "h1", 0.5, 9, 8)
	h.GPUType = "H100-80"
	offers := []cloud.Offering{offer("z-a", "v1", 1, 3, -1), h}
	p := Place(PlacementRequest{Offers: offers, Spot: fleet.SpotOnly, GPUTypes: []string{"V100-16"}, Need: slots(3, 1), AssumeSpotCapacity: 2})
	assert.Equal(t, []string{"z-a", "z-a"}, zonesOf(p))
	assert.Len(t, p.Unplaced, 1)
}

func TestSplitLayers(t *testing.T) {
	assert.Equal(t, []LayerRange{{0, 4}, {4, 7}, {7, 10}}, SplitLayers(10, 3))
	assert.Equal(t, []LayerRange{{0, 2}, {2, 4}}, SplitLayers(4, 2))
	assert.Equal(t, []LayerRange{{0, 32}}, SplitLayers(32, 1))
}

// Prefill replica 0 is not decode replica 0: each spreads its own stages, so a prefill stage
// goes to the cheap zone that decode replica 0 already uses; and prefill slots are placed
// after the decode ones whatever order they are asked in.
func TestPlaceSpreadsEachPoolsReplicaApart(t *testing.T) {
	offers := []cloud.Offering{offer("z-a", "v1", 1, 3, 8), offer("z-b", "v1", 1.5, 3, 8)}
	held := []ZoneUse{{Slot: Slot{Replica: 0, Stage: 0}, Zone: "z-a"}}
	p := Place(PlacementRequest{Offers: offers, Spot: fleet.SpotOnly, Need: []Slot{{Pool: PoolPrefill, Replica: 0, Stage: 0}}, Held: held})
	require.Len(t, p.Stages, 1)
	assert.Equal(t, "z-a", p.Stages[0].Key.Zone, "the prefill replica has no stage in z-a: the cheapest")

	p = Place(PlacementRequest{Offers: offers, Spot: fleet.SpotOnly,
		Need: []Slot{{Pool: PoolPrefill, Replica: 0, Stage: 1}, {Replica: 0, Stage: 1}}, Held: held})
	require.Len(t, p.Stages, 2)
	assert.Equal(t, Slot{Replica: 0, Stage: 1}, p.Stages[0].Slot)
	assert.Equal(t, "z-b", p.Stages[0].Key.Zone, "decode stage 1 away from its replica's stage 0")
	assert.Equal(t, Slot{Pool: PoolPrefill, Replica: 0, Stage: 1}, p.Stages[1].Slot)
}

// With DecodeReplicas and Depth, a prefill stage goes where the holder it streams to runs (the
// machine of the next stage of the decode replica it feeds, held or placed in the same call),
// before price and before spreading its own replica; where that zone has no room it is placed
// as before.
func TestPlacePutsAPrefillStageBesideTheDecodeStageItFeeds(t *testing.T) {
	offers := []cloud.Offering{offer("z-a", "v1", 1.5, 3, 8), offer("z-b", "v1", 1.4, 3, 8), offer("z-c", "v1", 1, 3, 8)}
	held := []ZoneUse{{Slot: Slot{Replica: 0, Stage: 0}, Zone: "z-a"}, {Slot: Slot{Replica: 0, Stage: 1}, Zone: "z-b"},
		{Slot: Slot{Replica: 1, Stage: 0}, Zone: "z-b"}, {Slot: Slot{Replica: 1, Stage: 1}, Zone: "z-a"}}
	prefill := []Slot{{Pool: PoolPrefill, Replica: 0, Stage: 0}, {Pool: PoolPrefill, Replica: 0, Stage: 1},
		{Pool: PoolPrefill, Replica: 1, Stage: 0}, {Pool: PoolPrefill, Replica: 1, Stage: 1}, {Pool: PoolPrefill, Replica: 2, Stage: 0}}
	p := Place(PlacementRequest{Offers: offers, Spot: fleet.SpotOnly, Need: prefill, Held: held, DecodeReplicas: 2, Depth: 2})
	require.Empty(t, p.Unplaced)
	assert.Equal(t, []string{"z-b", "z-a", "z-a", "z-b", "z-b"}, zonesOf(p),
		"prefill replica p's stage i beside decode replica p mod 2's stage i+1 (its holder), not in the cheapest zone")

	without := Place(PlacementRequest{Offers: offers, Spot: fleet.SpotOnly, Need: prefill[:2], Held: held})
	assert.Equal(t, []string{"z-c", "z-b"}, zonesOf(without), "without DecodeReplicas: cheapest, then spread")

	// Decode and prefill placed in one call: the prefill stage follows the decode stage's new zone.
	p = Place(PlacementRequest{Offers: offers, Spot: fleet.SpotOnly, DecodeReplicas: 1, Depth: 1,
		Need: []Slot{{Pool: PoolPrefill, Replica: 0, Stage: 0}, {Replica: 0, Stage: 0}}})
	assert.Equal(t, []string{"z-c", "z-c"}, zonesOf(p))

	// No room beside it: the cheapest of the rest, on spot before on-demand.
	short := []cloud.Offering{offer("z-a", "v1", 1.5, 3, 8), offer("z-b", "v1", 1.4, 3, 0), offer("z-c", "v1", 1, 3, 8)}
	p = Place(PlacementRequest{Offers: short, Spot: fleet.SpotWithFallback, Need: prefill[:1], Held: held, DecodeReplicas: 2, Depth: 2})
	require.Len(t, p.Stages, 1)
	assert.Equal(t, cloud.Spot, p.Stages[0].Key.Capacity)
	assert.Equal(t, "z-c", p.Stages[0].Key.Zone)
}
