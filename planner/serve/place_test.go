package serve

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/gpu"
)

func TestShapesGroupOfferingsAndPriceSpotOnlyWhenAllowed(t *testing.T) {
	t.Parallel()
	offers := []cloud.Offering{
		{Zone: "a", InstanceType: "g5.xlarge", GPUType: gpu.A10G, GPUsPerInstance: 1, OnDemandPrice: 1.0, SpotPrice: 0.4, SpotCapacity: -1},
		{Zone: "b", InstanceType: "g5.2xlarge", GPUType: gpu.A10G, GPUsPerInstance: 1, OnDemandPrice: 1.2, SpotPrice: 0.3, SpotCapacity: 2},
		{Zone: "a", InstanceType: "g5.12xlarge", GPUType: gpu.A10G, GPUsPerInstance: 4, OnDemandPrice: 5.7, SpotPrice: 0, SpotCapacity: 9},
		{Zone: "a", InstanceType: "mystery", GPUType: "X-1", GPUsPerInstance: 1, OnDemandPrice: 0.1},
	}
	shapes := shapesOf(offers, false, 4)
	assert.Len(t, shapes, 2, "A10G×1 and A10G×4; no datasheet for X-1")
	for _, s := range shapes {
		for _, src := range s.sources {
			assert.Equal(t, cloud.OnDemand, src.capacity)
			assert.Equal(t, 4, src.avail)
		}
	}
	shapes = shapesOf(offers, true, 4)
	one := shapes[0]
	assert.Equal(t, 1, one.per)
	// cheapest first: spot in b (hint 2), spot in a (no hint: 4 assumed), then on demand
	assert.Equal(t, []float64{0.3, 0.4, 1.0, 1.2}, []float64{one.sources[0].price, one.sources[1].price, one.sources[2].price, one.sources[3].price})
	assert.Equal(t, 2, one.sources[0].avail)
	assert.Equal(t, 4, one.sources[1].avail)
	assert.Len(t, shapes[1].sources, 1, "no spot price, no spot source")
}

func TestPlaceKeepsAReplicasMachinesTogether(t *testing.T) {
	t.Parallel()
	sources := []source{
		{offer: cloud.Offering{Zone: "a"}, capacity: cloud.Spot, price: 1, avail: 1},
		{offer: cloud.Offering{Zone: "b"}, capacity: cloud.Spot, price: 2, avail: 5},
		{offer: cloud.Offering{Zone: "c"}, capacity: cloud.OnDemand, price: 3, avail: 4},
	}
	avail := []int{1, 5, 4}
	// a pipeline over two machines cannot use zone a's one machine
	got, ok := place(sources, avail, packFor(16, 8), 3)
	assert.True(t, ok)
	assert.Equal(t, []Placement{
		{Zone: "b", Capacity: cloud.Spot, Instances: 4, Replicas: 2, USDPerHour: 8},
		{Zone: "c", Capacity: cloud.OnDemand, Instances: 2, Replicas: 1, USDPerHour: 6},
	}, got)
	assert.Equal(t, []int{1, 1, 2}, avail)
	assert.Equal(t, "mixed", capacityOf(got))
	_, ok = place(sources, avail, packFor(16, 8), 2)
	assert.False(t, ok, "one machine left in each zone")

	// four replicas of two GPUs share a machine of eight
	pk := packFor(2, 8)
	assert.Equal(t, packing{machines: 1, perUnit: 4}, pk)
	assert.Equal(t, 2, pk.units(5))
}

func TestQueueingApproximations(t *testing.T) {
	t.Parallel()
	// one server: Erlang C is the utilisation, and the p99 wait the heavy-traffic one
	assert.InDelta(t, 0.1/(2*(1-0.5))*math.Log(100*0.5), waitP99(5, 0.1, 1), 1e-12)
	// more servers behind one queue wait less at the same utilisation
	assert.Less(t, waitP99(40, 0.1, 8), waitP99(5, 0.1, 1))
	assert.Zero(t, waitP99(0.01, 0.1, 4))
	assert.True(t, waitP99(20, 0.1, 2) > 1e300, "an overloaded pool waits for ever")
	// P(X ≤ 3) = 0.981 and P(X ≤ 4) = 0.996 for a mean of 1
	assert.Equal(t, 4, poissonP99(1))
	assert.Zero(t, poissonP99(0))
	assert.InDelta(t, 100+2.33*10, poissonP99(100), 3)
}
