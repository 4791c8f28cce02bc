package planner

import "github.com/schooner-ml/schooner/gpu"

// Built-in network defaults. Where Sailor measured a GPU type (A100-40, A100-80, V100-16,
// GH-96 on GCP) its fits are copied here as data from providers/intra_node_bandwidths.json
// and providers/network_coeffs_all_homo.json (eth-easl/sailor, MIT licence); the other
// types get constant links from datasheets and instance specifications. docs/profiles.md
// lists every value and its source.

// sailorLink is one of Sailor's fits: a·x² + b·x + c GB/s, capped at peak bytes/s.
func sailorLink(a, b, c, peakBps float64) Link {
	return Link{Coeffs: [3]float64{a, b, c}, PeakBps: peakBps}
}

// constantLink is a size-independent link of gbps GB/s with a per-message latency.
func constantLink(gbps, latencyS float64) Link {
	return Link{Coeffs: [3]float64{0, 0, gbps}, PeakBps: gbps * 1e9, LatencyS: latencyS}
}

const (
	// achievableFraction is how much of a nominal link rate NCCL gets; Sailor measured
	// 249 GB/s over the A100's 300 GB/s NVLink (83%), and we apply about that to every
	// nominal figure below.
	achievableFraction = 0.8
	// nvlinkLatencyS and networkLatencyS are per-message costs for the constant links.
	nvlinkLatencyS  = 10e-6
	networkLatencyS = 50e-6
	// t4PCIeGBps: T4 boards sit on PCIe 3.0 x16 (about 12 GB/s achievable); the other
	// PCIe-only boards use pcieGBps (PCIe 4.0 x16).
	t4PCIeGBps = 12.0
)

// gbit converts a nominal network rate in Gbit/s to achievable GB/s.
func gbit(gbps float64) float64 { return gbps / 8 * achievableFraction }

// sailorIntraNode is Sailor's intra-node (NVLink) fits per GPU type and GPUs per node.
func sailorIntraNode() map[gpu.Type]map[int]Link {
	a100 := map[int]Link{
		2: sailorLink(0.80818532, 16.40103598, 32.98046678, 248876169884.0839),
		4: sailorLink(0.8303558, 15.58397854, 31.19114521, 243214602913.50012),
	}
	v100 := map[int]Link{
		2: sailorLink(-0.2045115, 7.21163513, 22.24208487, 68281636948.0),
		4: sailorLink(-0.2167128, 7.26270922, 22.51179176, 68172954066.0),
	}
	return map[gpu.Type]map[int]Link{
		gpu.A100_40: a100,
		gpu.A100_80: cloneLinks(a100), // Sailor lists the same fits for both
		gpu.V100:    v100,
		gpu.GH200: {
			2: sailorLink(-0.52312685, 14.22563803, 44.10217959, 125460726312.0102),
			4: sailorLink(-0.75177369, 26.46781337, 82.0621593, 250558342885.70334),
		},
	}
}

// sailorInterNode is Sailor's inter-node fits (two machines of one zone) per GPU type and
// GPUs per node; the rate grows with the machine because GCP's NIC does.
func sailorInterNode() map[gpu.Type]map[int]Link {
	return map[gpu.Type]map[int]Link{
		gpu.A100_40: {
			1: sailorLink(-0.0024414231124647644, 0.1408627339370467, 1.116822757126346, 2420367713.517156),
			2: sailorLink(-0.007196511652909052, 0.2316852991952904, 2.1127137995063974, 3674915935.759112),
			4: sailorLink(-0.03667895496478979, 0.4773282044079026, 4.5592610071684785, 6035913051.04673),
		},
		gpu.A100_80: {
			1: sailorLink(-0.02702103, 0.40848009, 2.83788164, 4523320921.6253),
			2: sailorLink(-0.03919906, 0.66349168, 4.8768101, 7622968423.04182),
			4: sailorLink(-0.10119137, 1.26955142, 9.54895121, 13536072890.20914),
		},
		gpu.V100: {
			1: sailorLink(0.004408380557873316, 0.046579932153075286, 0.8793574711743694, 1719640629.4376426),
			2: sailorLink(-0.011532109309884275, 0.10561766868954804, 1.7758034087071715, 2903571884.3939266),
			4: sailorLink(-0.008450897567554275, 0.32345407867588116, 3.446937175278422, 5787468328.312377),
		},
		gpu.GH200: {
			1: sailorLink(-0.16570216, 2.79431173, 11.74409677, 22934533176.529446),
			2: sailorLink(-0.33458842, 5.65056678, 23.30372797, 45696046497.67462),
			4: sailorLink(-0.65351182, 11.42553946, 45.25031399, 92551901043.9898),
		},
	}
}

// Sailor's measured zone pairs that stand in for any pair without a measurement: the
// fastest same-region pair (A100-40, 4 GPUs per node, us-central1-a to us-central1-b) and
// the fastest us-central1-a to us-west1-b fit (A100-40, 4 GPUs per node), from
// providers/multizone_bandwidths.json. Between never lets a cross-zone link beat either
// machine's own network link, so smaller machines get their NIC's rate (2.4-2.6 GB/s for
// one A100 per node, as Sailor measured).
var (
	sailorInterZone   = sailorLink(-0.05092827434882089, 0.5374926688038091, 4.9839431828104255, 6654214604.308426)
	sailorInterRegion = sailorLink(-0.00040892143365698735, 0.05616116161616258, 0.3759738417601813, 1091637396.6324494)
)

// Egress prices in USD per GB (GCP list prices as Sailor used them: providers/gcp/
// communication_cost.json has 0.01 between us-central1 zones and 0.02 to us-west1; 0.05
// between the US and Europe).
const (
	defaultEgressInterZone      = 0.01
	defaultEgressInterRegion    = 0.02
	defaultEgressInterContinent = 0.05
)

// datasheetLinks adds constant links for the GPU types Sailor did not measure.
//
// Intra-node: NVLink per GPUSpec.NVLinkGBps for NVLink boards (H100, H200; V100-32 uses
// Sailor's V100-16 measurement, the same NVLink 2 hardware), PCIe for the rest (T4 on PCIe
// 3.0, A10G and L4 on PCIe 4.0).
//
// Inter-node, nominal rates per machine: H100/H200 (AWS p5, GCP a3) 100 Gbit/s for 1-4
// GPUs and 400 Gbit/s (p4d's EFA rate; p5 has far more) for 8; V100-32 (p3dn.24xlarge)
// 100 Gbit/s; T4, A10G and L4 (g4dn, g5, g6, g2) 25 Gbit/s for 1-2 GPUs, 50 for 4, 100 for
// 8. Each at achievableFraction.
func datasheetLinks(intra, inter map[gpu.Type]map[int]Link) {
	counts := []int{1, 2, 4, 8}
	for _, g := range []gpu.Type{gpu.H100, gpu.H200} {
		spec, _ := Spec(g)
		intra[g] = map[int]Link{}
		inter[g] = map[int]Link{}
		for _, n := range counts {
			intra[g][n] = constantLink(spec.NVLinkGBps*achievableFraction, nvlinkLatencyS)
			rate := 100.0
			if n == 8 {
				rate = 400
			}
			inter[g][n] = constantLink(gbit(rate), networkLatencyS)
		}
	}

	intra[gpu.V100_32] = cloneLinks(intra[gpu.V100])
	inter[gpu.V100_32] = map[int]Link{}
	for _, n := range counts {
		inter[gpu.V100_32][n] = constantLink(gbit(100), networkLatencyS)
	}

	for _, g := range []gpu.Type{gpu.T4, gpu.A10G, gpu.L4} {
		pcie := pcieGBps
		if g == gpu.T4 {
			pcie = t4PCIeGBps
		}
		intra[g] = map[int]Link{}
		inter[g] = map[int]Link{}
		for _, n := range counts {
			intra[g][n] = constantLink(pcie, nvlinkLatencyS)
			rate := 25.0
			switch n {
			case 4:
				rate = 50
			case 8:
				rate = 100
			}
			inter[g][n] = constantLink(gbit(rate), networkLatencyS)
		}
	}
}

func cloneLinks(m map[int]Link) map[int]Link {
	out := make(map[int]Link, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// DefaultNetwork is the network schooner assumes when nothing was measured: Sailor's GCP
// measurements for the GPU types it covers, datasheet constants for the others, Sailor's
// zone-pair fits for unmeasured zone pairs, and list egress prices. Each call returns a
// fresh value the caller may change.
func DefaultNetwork() *Network {
	intra := sailorIntraNode()
	inter := sailorInterNode()
	datasheetLinks(intra, inter)
	return &Network{
		IntraNode:            intra,
		InterNode:            inter,
		Zones:                map[string]map[string]Link{},
		InterZone:            sailorInterZone,
		InterRegion:          sailorInterRegion,
		Egress:               map[string]map[string]float64{},
		EgressInterZone:      defaultEgressInterZone,
		EgressInterRegion:    defaultEgressInterRegion,
		EgressInterContinent: defaultEgressInterContinent,
	}
}
