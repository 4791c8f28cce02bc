package training

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func offers() []cloud.Offering {
	return []cloud.Offering{
		{Zone: "a", InstanceType: "g", SpotCapacity: 4, SpotPrice: 1, OnDemandPrice: 3},
		{Zone: "b", InstanceType: "g", SpotCapacity: 4, SpotPrice: 1, OnDemandPrice: 3},
	}
}

func TestSpotStrategyAvoidsAPreemptingZoneForItsTTLInProviderTime(t *testing.T) {
	s := SpotStrategy{Policy: SpotOnly, Scale: 60, AvoidZoneTTL: 10 * time.Minute}
	s.Preempted("a", t0)
	got := s.Usable(offers(), t0.Add(5*time.Second))
	require.Len(t, got, 1)
	assert.Equal(t, "b", got[0].Zone)
	assert.Len(t, s.Usable(offers(), t0.Add(10*time.Second)), 2, "10 simulated minutes at 60x are 10 wall seconds")
	assert.Empty(t, s.Avoided, "expired entries are pruned")
}

func TestSpotStrategyLeavesShortOfferingsOutUnlessOnDemandCanStandIn(t *testing.T) {
	s := SpotStrategy{Policy: SpotWithFallback, Scale: 1, UnavailableTTL: 3 * time.Minute}
	s.Short([]cloud.OfferingKey{{Capacity: cloud.Spot, InstanceType: "g", Zone: "a"}}, t0)
	assert.Len(t, s.Usable(offers(), t0.Add(time.Minute)), 1)
	s.OnDemand = true
	got := s.Usable(offers(), t0.Add(time.Minute))
	require.Len(t, got, 2, "on demand, the offering stays")
	assert.Equal(t, 0, got[0].SpotCapacity, "without its short spot capacity")
	s.Short([]cloud.OfferingKey{{Capacity: cloud.OnDemand, InstanceType: "g", Zone: "a"}}, t0)
	assert.Len(t, s.Usable(offers(), t0.Add(time.Minute)), 1, "short on both sides: out")
}

func TestSpotStrategyBuysOnDemandOnlyToKeepTheDeadline(t *testing.T) {
	s := SpotStrategy{Policy: SpotWithFallback, Scale: 1, Deadline: t0.Add(10 * time.Hour)}
	s.Planned(2) // a spot-only plan at 2 s/iteration
	assert.False(t, s.DeadlineCheck(t0, 10_000, 2), "20,000 s fit in 10 h")
	assert.True(t, s.DeadlineCheck(t0, 20_000, 2), "40,000 s do not: add on-demand capacity")
	assert.True(t, s.OnDemand)
	assert.True(t, s.BuysOnDemand())
	assert.True(t, s.KeepsSurvivor(cloud.OnDemand))
	s.Planned(1) // the on-demand plan's pace does not replace the spot-only one
	assert.Equal(t, 2.0, s.SpotIterSeconds)
	assert.False(t, s.DeadlineCheck(t0, 16_000, 1), "spot alone needs 32,000 s: more than 80% of the slack")
	assert.True(t, s.DeadlineCheck(t0, 10_000, 1), "spot alone needs 20,000 s: back to spot")
	assert.False(t, s.OnDemand)
	assert.False(t, s.KeepsSurvivor(cloud.OnDemand), "on-demand machines are dropped")
}

func TestSpotStrategyWithoutFallbackOrDeadlineNeverBuysOnDemand(t *testing.T) {
	for _, s := range []SpotStrategy{
		{Policy: SpotOnly, Deadline: t0.Add(time.Hour)},
		{Policy: SpotWithFallback},
	} {
		assert.False(t, s.DeadlineCheck(t0, 1_000_000, 10))
		assert.False(t, s.BuysOnDemand())
	}
	od := SpotStrategy{Policy: OnDemandOnly}
	assert.True(t, od.SpotOff())
	assert.True(t, od.BuysOnDemand())
}

func TestDeadlineResolvesDurationsInProviderTime(t *testing.T) {
	d, err := ParseDeadline("6h")
	require.NoError(t, err)
	assert.Equal(t, t0.Add(6*time.Minute), d.Resolve(t0, 60))
	assert.Equal(t, t0.Add(6*time.Hour), d.Resolve(t0, cloud.Real))
	at, err := ParseDeadline("2027-01-02T15:04:05Z")
	require.NoError(t, err)
	assert.Equal(t, at.At, at.Resolve(t0, 60), "an absolute time is taken as is")
}

func TestSpotStrategyWaitingForCapacityBuysOnDemandBeforeTheDeadlineIsLost(t *testing.T) {
	s := SpotStrategy{Policy: SpotWithFallback, Scale: 1, Deadline: t0.Add(10 * time.Hour)}
	assert.False(t, s.Waiting(t0, time.Minute, 10_000, 0), "no pace known: it cannot tell")
	assert.False(t, s.Waiting(t0, time.Minute, 10_000, 2), "20,000 s and a minute's wait fit in 10 h")
	assert.False(t, s.OnDemand)
	assert.True(t, s.Waiting(t0.Add(4*time.Hour+30*time.Minute), time.Minute, 10_000, 2), "5.5 h left, 5.57 h needed: buy now")
	assert.True(t, s.OnDemand)
	assert.False(t, s.Waiting(t0.Add(9*time.Hour), time.Minute, 10_000, 2), "already buying: no change")

	for _, other := range []SpotStrategy{
		{Policy: SpotOnly, Scale: 1, Deadline: t0.Add(time.Hour)},
		{Policy: SpotWithFallback, Scale: 1},
	} {
		assert.False(t, other.Waiting(t0, time.Minute, 1_000_000, 2), "%+v", other)
	}
}
