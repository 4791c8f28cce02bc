package planner

import (
	"math"

	"github.com/schooner-ml/schooner/gpu"
)

// Link is the bandwidth of one kind of connection as a function of message size: Sailor fits
// bandwidth in GB/s as a quadratic in log2(message MB) and caps it at the measured peak.
type Link struct {
	// Coeffs are a, b, c of a·x² + b·x + c GB/s with x = log2(bytes / 1e6).
	Coeffs [3]float64 `json:"coeffs"`
	// PeakBps caps the bandwidth, bytes per second.
	PeakBps float64 `json:"peak_bps"`
	// LatencyS is added once per message.
	LatencyS float64 `json:"latency_s"`
	// senders is how many GPUs of one machine send over the link at once, each a message of
	// the size asked about (SharedBy); 0 or 1: one.
	senders int
}

// SharedBy is the link as one of n GPUs of a machine sees it when all n send at once, as in
// a gradient all-reduce where every GPU of every replica runs its own ring. Sailor's
// machine-to-machine fits for n GPUs per machine measure the machine's aggregate (n
// parallel streams: 4 × 22.9 GB/s on a GH200 node with a NIC per GPU, one 2.9 GB/s NIC
// however many RTX 2080s share it), so each GPU moves its message at the aggregate
// bandwidth of n such messages, divided by n.
func (l Link) SharedBy(n int) Link {
	if n > 1 {
		l.senders = n
	}
	return l
}

// Bandwidth is the bytes per second for a message of this size.
func (l Link) Bandwidth(bytes float64) float64 {
	if n := l.senders; n > 1 {
		l.senders = 0
		return l.Bandwidth(bytes*float64(n)) / float64(n)
	}
	if bytes <= 0 {
		return l.PeakBps
	}
	x := math.Log2(bytes / 1e6)
	gbps := l.Coeffs[0]*x*x + l.Coeffs[1]*x + l.Coeffs[2]
	bps := gbps * 1e9
	if l.PeakBps > 0 && (bps > l.PeakBps || bps <= 0) {
		bps = l.PeakBps
	}
	if bps <= 0 {
		bps = 1e6 // a fit gone negative at tiny sizes: assume 1 MB/s rather than infinity
	}
	return bps
}

// Time is how long a message of bytes takes over the link.
func (l Link) Time(bytes float64) float64 {
	if bytes <= 0 {
		return 0
	}
	return l.LatencyS + bytes/l.Bandwidth(bytes)
}

// Endpoint is where a group of GPUs sits, as far as the network is concerned.
type Endpoint struct {
	GPU         gpu.Type `json:"gpu"`
	GPUsPerNode int      `json:"gpus_per_node"`
	Zone        string   `json:"zone"`
	Region      string   `json:"region"`
}

// Network knows the links between GPUs and what crossing a zone or region costs. Between and
// EgressUSDPerGB are the simulator's only questions; how they are answered (Sailor's measured
// fits, or defaults) is the profile loader's business.
type Network struct {
	// IntraNode[gpu][gpusPerNode]: NVLink/PCIe inside one machine (TP, and p2p between
	// stages placed on one machine).
	IntraNode map[gpu.Type]map[int]Link `json:"intra_node"`
	// InterNode[gpu][gpusPerNode]: between machines of one zone.
	InterNode map[gpu.Type]map[int]Link `json:"inter_node"`
	// Zones[a][b]: measured links between two zones (a != b); missing pairs use InterZone
	// or InterRegion.
	Zones       map[string]map[string]Link `json:"zones"`
	InterZone   Link                       `json:"inter_zone"`
	InterRegion Link                       `json:"inter_region"`
	// Egress[a][b] USD per GB from zone a to zone b; missing pairs use the defaults below.
	Egress               map[string]map[string]float64 `json:"egress"`
	EgressInterZone      float64                       `json:"egress_inter_zone"`
	EgressInterRegion    float64                       `json:"egress_inter_region"`
	EgressInterContinent float64                       `json:"egress_inter_continent"`
}
