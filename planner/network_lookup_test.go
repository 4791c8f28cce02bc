package planner_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/profiles"
)

func netEP(g gpu.Type, perNode int, zone, region string) planner.Endpoint {
	return planner.Endpoint{GPU: g, GPUsPerNode: perNode, Zone: zone, Region: region}
}

func TestDefaultNetworkCoversEveryGPUType(t *testing.T) {
	t.Parallel()
	n := planner.DefaultNetwork()
	for _, g := range gpu.KnownTypes {
		for _, per := range []int{1, 2, 4, 8} {
			e := netEP(g, per, "z", "r")
			intra := n.IntraNodeLink(e)
			inter := n.Between(e, e)
			assert.Positive(t, intra.Bandwidth(64<<20), g)
			assert.Positive(t, inter.Bandwidth(64<<20), g)
			assert.Greater(t, intra.Bandwidth(256<<20), inter.Bandwidth(256<<20), "%s %d: NVLink/PCIe beats the NIC", g, per)
		}
	}
	assert.Equal(t, 0.01, n.EgressInterZone)
	assert.Equal(t, 0.02, n.EgressInterRegion)
	assert.Equal(t, 0.05, n.EgressInterContinent)

	// Sailor's measurements, copied: A100 NVLink 249 GB/s, V100 68 GB/s, one-GPU A100
	// machines 2.4 GB/s apart, GH200 22.9 GB/s.
	assert.InDelta(t, 248.9e9, n.IntraNodeLink(netEP(gpu.A100_40, 2, "z", "r")).PeakBps, 0.1e9)
	assert.InDelta(t, 68.3e9, n.IntraNodeLink(netEP(gpu.V100, 2, "z", "r")).PeakBps, 0.1e9)
	assert.InDelta(t, 2.42e9, n.Between(netEP(gpu.A100_40, 1, "z", "r"), netEP(gpu.A100_40, 1, "z", "r")).PeakBps, 0.01e9)
	assert.InDelta(t, 22.9e9, n.Between(netEP(gpu.GH200, 1, "z", "r"), netEP(gpu.GH200, 1, "z", "r")).PeakBps, 0.1e9)
	// Datasheet constants: H100 NVLink 450 GB/s at 80%; an 8-GPU L4 machine's 100 Gbit/s.
	assert.InDelta(t, 360e9, n.IntraNodeLink(netEP(gpu.H100, 8, "z", "r")).PeakBps, 1)
	assert.InDelta(t, 10e9, n.Between(netEP(gpu.L4, 8, "z", "r"), netEP(gpu.L4, 8, "z", "r")).PeakBps, 1)

	// Each call is a fresh value.
	n.InterZone = planner.Link{}
	assert.NotEqual(t, planner.Link{}, planner.DefaultNetwork().InterZone)
}

func TestBetweenSameZoneIsTheSlowerMachine(t *testing.T) {
	t.Parallel()
	n := planner.DefaultNetwork()
	a100x4 := netEP(gpu.A100_40, 4, "us-central1-a", "us-central1")
	v100x1 := netEP(gpu.V100, 1, "us-central1-a", "us-central1")
	assert.Equal(t, n.InterNode[gpu.A100_40][4], n.Between(a100x4, a100x4))
	assert.Equal(t, n.InterNode[gpu.V100][1], n.Between(a100x4, v100x1))
	assert.Equal(t, n.InterNode[gpu.V100][1], n.Between(v100x1, a100x4))

	// Machine sizes without a measurement use the largest measured size below them.
	a100x8 := netEP(gpu.A100_40, 8, "us-central1-a", "us-central1")
	assert.Equal(t, n.InterNode[gpu.A100_40][4], n.Between(a100x8, a100x8))
	assert.Equal(t, n.InterNode[gpu.A100_40][1], n.Between(netEP(gpu.A100_40, 0, "z", ""), netEP(gpu.A100_40, 0, "z", "")))
}

func TestBetweenZones(t *testing.T) {
	t.Parallel()
	fast := planner.Link{Coeffs: [3]float64{0, 0, 100}, PeakBps: 100e9}
	slow := planner.Link{Coeffs: [3]float64{0, 0, 0.5}, PeakBps: 0.5e9}
	mid := planner.Link{Coeffs: [3]float64{0, 0, 3}, PeakBps: 3e9}
	wan := planner.Link{Coeffs: [3]float64{0, 0, 1}, PeakBps: 1e9}
	n := &planner.Network{
		InterNode:   map[gpu.Type]map[int]planner.Link{gpu.H100: {8: fast}, gpu.V100: {1: mid}},
		Zones:       map[string]map[string]planner.Link{"us-central1-a": {"us-west1-b": slow}},
		InterZone:   mid,
		InterRegion: wan,
	}
	h := func(zone, region string) planner.Endpoint { return netEP(gpu.H100, 8, zone, region) }

	// A measured pair, either direction.
	assert.Equal(t, slow, n.Between(h("us-central1-a", "us-central1"), h("us-west1-b", "us-west1")))
	assert.Equal(t, slow, n.Between(h("us-west1-b", "us-west1"), h("us-central1-a", "us-central1")))
	// Unmeasured pairs: by region, with regions read from zone names when missing.
	assert.Equal(t, mid, n.Between(h("us-east-1a", ""), h("us-east-1b", "")))
	assert.Equal(t, wan, n.Between(h("us-east-1a", ""), h("eu-west-1a", "")))
	assert.Equal(t, mid, n.Between(h("us-central1-b", ""), h("us-central1-c", "")))
	// Never faster than a machine's own link.
	v := netEP(gpu.V100, 1, "us-east-1a", "us-east-1")
	assert.Equal(t, wan, n.Between(v, h("eu-west-1a", "eu-west-1")))

	// Unknown GPU types and a nil network still answer.
	assert.Positive(t, n.Between(netEP("TPU", 4, "a", "r"), netEP("TPU", 4, "a", "r")).Bandwidth(1e6))
	var none *planner.Network
	assert.Positive(t, none.Between(h("a", "r"), h("b", "r")).Bandwidth(1e6))
	assert.Positive(t, none.IntraNodeLink(h("a", "r")).Bandwidth(1e6))
	assert.Zero(t, none.EgressUSDPerGB(h("a", "r"), h("b", "r")))
}

func TestBetweenSailorZonePairs(t *testing.T) {
	t.Parallel()
	n := planner.DefaultNetwork()
	// Sailor: 2.4-2.6 GB/s between one-A100 machines of one region, 6-6.65 GB/s with four
	// GPUs per machine; 0.5-1.1 GB/s from us-central1 to us-west1.
	one := func(zone, region string) planner.Endpoint { return netEP(gpu.A100_40, 1, zone, region) }
	four := func(zone, region string) planner.Endpoint { return netEP(gpu.A100_40, 4, zone, region) }
	peak := func(l planner.Link) float64 { return l.PeakBps / 1e9 }
	assert.InDelta(t, 2.5, peak(n.Between(one("us-central1-a", "us-central1"), one("us-central1-b", "us-central1"))), 0.1)
	assert.InDelta(t, 6.3, peak(n.Between(four("us-central1-a", "us-central1"), four("us-central1-b", "us-central1"))), 0.4)
	assert.InDelta(t, 0.8, peak(n.Between(four("us-central1-a", "us-central1"), four("us-west1-b", "us-west1"))), 0.3)
	assert.InDelta(t, 0.8, peak(n.Between(one("us-central1-a", "us-central1"), one("us-west1-b", "us-west1"))), 0.3)
}

func TestEgressUSDPerGB(t *testing.T) {
	t.Parallel()
	n := planner.DefaultNetwork()
	n.Egress["us-central1-a"] = map[string]float64{"us-central1-b": 0.007}
	e := func(zone string) planner.Endpoint { return netEP(gpu.A100_40, 1, zone, "") }
	cases := []struct {
		from, to string
		want     float64
	}{
		{"us-central1-a", "us-central1-a", 0},
		{"us-central1-a", "us-central1-b", 0.007}, // the table
		{"us-central1-b", "us-central1-a", 0.01},  // no entry that way: inter-zone
		{"us-central1-a", "us-west1-b", 0.02},
		{"us-east-1a", "us-east-1b", 0.01},
		{"us-east-1a", "us-west-2a", 0.02},
		{"us-east-1a", "northamerica-northeast1-a", 0.02},
		{"europe-west4-a", "eu-central-1a", 0.02},
		{"asia-east1-a", "ap-northeast-1a", 0.02},
		{"us-central1-a", "europe-west4-a", 0.05},
		{"us-east-1a", "ap-south-1a", 0.05},
		{"mars-1a", "mars-2a", 0.05}, // unknown regions: priced as another continent
	}
	for _, c := range cases {
		assert.Equal(t, c.want, n.EgressUSDPerGB(e(c.from), e(c.to)), "%s -> %s", c.from, c.to)
	}
	// An endpoint's own region wins over its zone name.
	a := planner.Endpoint{Zone: "zone-one", Region: "us-east1"}
	b := planner.Endpoint{Zone: "zone-two", Region: "us-east1"}
	assert.Equal(t, 0.01, n.EgressUSDPerGB(a, b))
}

func TestLinkPeaksAreCopiedFromSailorExactly(t *testing.T) {
	t.Parallel()
	n := planner.DefaultNetwork()
	l := n.InterNode[gpu.GH200][4]
	require.Equal(t, [3]float64{-0.65351182, 11.42553946, 45.25031399}, l.Coeffs)
	require.Equal(t, 92551901043.9898, l.PeakBps)
}

func TestBetweenComparesLinksByTransferTime(t *testing.T) {
	t.Parallel()
	// A link that is fast for big messages but slow for small ones loses to a steady one.
	bursty := planner.Link{Coeffs: [3]float64{0, 3, 1}, PeakBps: 40e9}
	steady := planner.Link{Coeffs: [3]float64{0, 0, 5}, PeakBps: 5e9}
	n := &planner.Network{InterNode: map[gpu.Type]map[int]planner.Link{gpu.A100_40: {1: bursty}, gpu.V100: {1: steady}}}
	a := netEP(gpu.A100_40, 1, "z", "r")
	b := netEP(gpu.V100, 1, "z", "r")
	var tb, ts float64
	for e := 16; e <= 30; e += 2 {
		size := float64(int64(1) << e)
		tb += bursty.Time(size)
		ts += steady.Time(size)
	}
	want := steady
	if tb > ts {
		want = bursty
	}
	assert.Equal(t, want, n.Between(a, b))
	assert.Equal(t, want, n.Between(b, a))
}

// Sailor's inter-node fits for n GPUs per machine are the machine's aggregate: shared by the
// 4 GPUs of a GH200 node that all send at once, each gets what one GPU with its own NIC gets;
// on a machine with one NIC for all its GPUs (RTX 2080), each gets a quarter.
func TestSharedLinkIsTheMachinesAggregateOverItsGPUs(t *testing.T) {
	t.Parallel()
	n := planner.DefaultNetwork()
	one, four := n.InterNode[gpu.GH200][1], n.InterNode[gpu.GH200][4]
	for _, bytes := range []float64{62.5e6, 125e6, 500e6} { // an all-reduce step: a 500 MB bucket over 8, 4 or 1 replicas
		perGPU := four.SharedBy(4).Bandwidth(bytes)
		assert.InEpsilon(t, one.Bandwidth(bytes), perGPU, 0.05, "%.0f bytes", bytes)
		assert.InDelta(t, four.Bandwidth(4*bytes)/4, perGPU, 1)
	}
	assert.Equal(t, four, four.SharedBy(1), "one sender: the link itself")
	assert.Equal(t, four.Time(1e8), four.SharedBy(0).Time(1e8))

	_, sailor, err := profiles.Bundled()
	require.NoError(t, err)
	rtx := sailor.InterNode["RTX-2080"]
	assert.InEpsilon(t, rtx[4].Bandwidth(4*1e8)/4, rtx[4].SharedBy(4).Bandwidth(1e8), 1e-9)
	assert.InEpsilon(t, 0.25, rtx[4].SharedBy(4).Bandwidth(1e9)/rtx[1].Bandwidth(1e9), 0.05, "one NIC for four GPUs")
}
