package planner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
)

// Hand-built profiles and networks whose numbers make expected results easy to compute.

const ms = 1e-3

// toyModel has n layers; every layer at TP 1 holds paramsFloats parameters, keeps
// actMemFloats activation floats per sample and outputs actOutFloats; TP 2 halves params and
// activations memory.
func toyModel(n int, paramsFloats, actMemFloats, actOutFloats float64) *ModelProfile {
	m := &ModelProfile{Name: "toy", SeqLen: 1024, Mem: map[int][]LayerMem{}, Compute: map[gpu.Type]*Compute{}}
	for _, tp := range []int{1, 2} {
		layers := make([]LayerMem, n)
		for i := range layers {
			layers[i] = LayerMem{
				ParamsFloats:    paramsFloats / float64(tp),
				ActMemFloats:    actMemFloats / float64(tp),
				ActOutputFloats: actOutFloats,
				ActInputFloats:  actOutFloats,
			}
		}
		m.Mem[tp] = layers
	}
	return m
}

// toyA100 is the toy model most tests simulate: four layers of 1e6 parameter, activation
// and output floats each, with an A100-40 profile at TP 1, micro-batch 1 (a100Time a layer).
func toyA100() *ModelProfile {
	return withCompute(toyModel(4, 1e6, 1e6, 1e6), gpu.A100_40, 1, 1, a100Time)
}

// mixedModel is toyModel with a TP 1, micro-batch 1 profile on an A100-40 (a100Time) and on a
// V100 (v100Time).
func mixedModel(n int, paramsFloats, actMemFloats, actOutFloats float64) *ModelProfile {
	m := withCompute(toyModel(n, paramsFloats, actMemFloats, actOutFloats), gpu.A100_40, 1, 1, a100Time)
	return withCompute(m, gpu.V100, 1, 1, v100Time)
}

// withCompute gives m a profile for g at tp and mbs where every layer takes t.
func withCompute(m *ModelProfile, g gpu.Type, tp, mbs int, t LayerTime) *ModelProfile {
	c := m.Compute[g]
	if c == nil {
		c = &Compute{GPU: g, Source: "test", Times: map[int]map[int][]LayerTime{}}
		m.Compute[g] = c
	}
	if c.Times[tp] == nil {
		c.Times[tp] = map[int][]LayerTime{}
	}
	layers := make([]LayerTime, m.NumLayers())
	for i := range layers {
		layers[i] = t
	}
	c.Times[tp][mbs] = layers
	return m
}

// flatLink moves gbps GB/s whatever the message size, plus latency per message.
func flatLink(gbps, latency float64) Link {
	return Link{Coeffs: [3]float64{0, 0, gbps}, PeakBps: gbps * 1e9, LatencyS: latency}
}

// flatNet uses one link for everything: inside machines, between machines, zones, regions.
func flatNet(l Link) *Network { return layeredNet(l, l, l, l) }

// simulateOnGigabit simulates p for m over flatNet(flatLink(1, 0)), 1 GB/s everywhere and no
// latency, the network whose transfer times the tests work out by hand; an error fails t.
func simulateOnGigabit(t *testing.T, p *Plan, m *ModelProfile) Estimate {
	t.Helper()
	est, err := Simulate(p, m, flatNet(flatLink(1, 0)))
	require.NoError(t, err)
	return est
}

// layeredNet has one link per level, the same for every GPU type and machine size.
// Crossing zones costs 0.01 USD/GB, regions 0.02, as on GCP in the US.
func layeredNet(intra, inter, interZone, interRegion Link) *Network {
	n := &Network{
		IntraNode:            map[gpu.Type]map[int]Link{},
		InterNode:            map[gpu.Type]map[int]Link{},
		InterZone:            interZone,
		InterRegion:          interRegion,
		EgressInterZone:      0.01,
		EgressInterRegion:    0.02,
		EgressInterContinent: 0.05,
	}
	for _, g := range gpu.KnownTypes {
		n.IntraNode[g] = map[int]Link{}
		n.InterNode[g] = map[int]Link{}
		for _, k := range []int{1, 2, 4, 8} {
			n.IntraNode[g][k] = intra
			n.InterNode[g][k] = inter
		}
	}
	return n
}

// replica is a replica of g at tp on a machine of 8 GPUs, in zone (region us-central1).
func replica(g gpu.Type, tp int, zone string, usd float64) Replica {
	return Replica{GPU: g, TP: tp, Zone: zone, Region: "us-central1", GPUsPerNode: 8, USDPerGPUHour: usd}
}

func stage(first, last int, rs ...Replica) Stage {
	return Stage{FirstLayer: first, LastLayer: last, Replicas: rs}
}

func plan(gbs, mbs int, stages ...Stage) *Plan {
	return &Plan{Model: "toy", GlobalBatch: gbs, MicroBatch: mbs, Stages: stages}
}

// twoA100Stages runs toyA100's four layers at global batch 8, micro-batch 1, as two stages
// of one A100-40 replica each in us-central1-a; the first stage ends at layer last.
func twoA100Stages(last int) *Plan {
	return plan(8, 1,
		stage(0, last, replica(gpu.A100_40, 1, "us-central1-a", 4)),
		stage(last+1, 3, replica(gpu.A100_40, 1, "us-central1-a", 4)))
}
