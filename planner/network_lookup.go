package planner

import (
	"math"
	"strings"

	"github.com/schooner-ml/schooner/gpu"
)

// fallbackIntraNode and fallbackInterNode answer for GPU types a network knows nothing
// about: PCIe 4.0 inside a machine, a 25 Gbit/s NIC between machines (the smallest GPU
// instances').
var (
	fallbackIntraNode = constantLink(pcieGBps, nvlinkLatencyS)
	fallbackInterNode = constantLink(gbit(25), networkLatencyS)
)

// Between is the link data crosses going from GPUs at a to GPUs at b.
//
// Endpoints do not name machines, so two endpoints in one zone are taken to be on
// different machines: the link is the slower of the two sides' InterNode links (a
// conservative choice; IntraNodeLink answers for callers that know the GPUs share a
// machine). Across zones the link is Zones[a][b] (or Zones[b][a]), else InterZone within a
// region and InterRegion across regions; it is never faster than either side's InterNode
// link, since every byte also leaves through a machine's NIC. "Slower" compares transfer
// times over the message sizes Sailor profiled (64 KiB to 1 GiB). A nil network answers
// with the fallback constants.
func (n *Network) Between(a, b Endpoint) Link {
	la, lb := n.interNode(a), n.interNode(b)
	if a.Zone == b.Zone {
		return slower(la, lb)
	}
	return slower(slower(n.zoneLink(a, b), la), lb)
}

// IntraNodeLink is the link between GPUs of one machine at e: NVLink or PCIe.
func (n *Network) IntraNodeLink(e Endpoint) Link {
	if n == nil {
		return fallbackIntraNode
	}
	return linkOr(n.IntraNode, e, fallbackIntraNode)
}

// EgressUSDPerGB is what a GB sent from a to b costs: nothing inside a zone, the price in
// Egress[a.Zone][b.Zone] when there is one, else EgressInterZone within a region,
// EgressInterRegion within a continent and EgressInterContinent across continents. Regions
// come from the endpoints (or their zone names) and continents from the region's prefix
// (us-, europe-/eu-, asia-/ap-, ...).
func (n *Network) EgressUSDPerGB(a, b Endpoint) float64 {
	if n == nil || a.Zone == b.Zone {
		return 0
	}
	if v, ok := n.Egress[a.Zone][b.Zone]; ok {
		return v
	}
	ra, rb := regionOf(a), regionOf(b)
	switch {
	case ra == rb:
		return n.EgressInterZone
	case continentOf(ra) == continentOf(rb):
		return n.EgressInterRegion
	default:
		return n.EgressInterContinent
	}
}

// interNode is e's machine-to-machine link within its zone.
func (n *Network) interNode(e Endpoint) Link {
	if n == nil {
		return fallbackInterNode
	}
	return linkOr(n.InterNode, e, fallbackInterNode)
}

// zoneLink is the path between the zones of a and b (a.Zone != b.Zone).
func (n *Network) zoneLink(a, b Endpoint) Link {
	if n == nil {
		return fallbackInterNode
	}
	if l, ok := n.Zones[a.Zone][b.Zone]; ok {
		return l
	}
	if l, ok := n.Zones[b.Zone][a.Zone]; ok {
		return l
	}
	l := n.InterRegion
	if regionOf(a) == regionOf(b) {
		l = n.InterZone
	}
	if l == (Link{}) {
		return fallbackInterNode
	}
	return l
}

// linkOr is byGPU's link for e's GPU type and machine size (see linkFor), or fallback when
// byGPU lists none for that type: the one lookup behind IntraNodeLink and interNode.
func linkOr(byGPU map[gpu.Type]map[int]Link, e Endpoint, fallback Link) Link {
	if l, ok := linkFor(byGPU[e.GPU], e.GPUsPerNode); ok {
		return l
	}
	return fallback
}

// linkFor picks the entry for gpusPerNode machines: an exact match, else the largest
// machine size below it (a machine's NIC does not shrink as it grows), else the smallest
// one listed.
func linkFor(byCount map[int]Link, gpusPerNode int) (Link, bool) {
	if len(byCount) == 0 {
		return Link{}, false
	}
	if gpusPerNode < 1 {
		gpusPerNode = 1
	}
	if l, ok := byCount[gpusPerNode]; ok {
		return l, true
	}
	below, smallest := 0, 0
	for c := range byCount {
		if c <= gpusPerNode && c > below {
			below = c
		}
		if smallest == 0 || c < smallest {
			smallest = c
		}
	}
	if below > 0 {
		return byCount[below], true
	}
	return byCount[smallest], true
}

// comparisonSizes are the message sizes links are compared at: 2^16 to 2^30 bytes, the
// range Sailor profiled, in steps of 4; comparisonX are their log2(bytes / 1e6), so that
// comparing needs no logarithms (Between sits in the simulator's inner loop).
var comparisonSizes, comparisonX = func() ([]float64, []float64) {
	var sizes, xs []float64
	for e := 16; e <= 30; e += 2 {
		size := math.Ldexp(1, e)
		sizes = append(sizes, size)
		xs = append(xs, math.Log2(size/1e6))
	}
	return sizes, xs
}()

// totalTime is the time l takes for every comparison size; it computes what Link.Time does.
func totalTime(l Link) float64 {
	var total float64
	for i, size := range comparisonSizes {
		x := comparisonX[i]
		bps := (l.Coeffs[0]*x*x + l.Coeffs[1]*x + l.Coeffs[2]) * 1e9
		if l.PeakBps > 0 && (bps > l.PeakBps || bps <= 0) {
			bps = l.PeakBps
		}
		if bps <= 0 {
			bps = 1e6
		}
		total += l.LatencyS + size/bps
	}
	return total
}

// slower returns whichever of x and y takes longer to move the comparison sizes; x on a tie.
func slower(x, y Link) Link {
	if x == y {
		return x
	}
	if totalTime(y) > totalTime(x) {
		return y
	}
	return x
}

// regionOf is e's region, or the region its zone name implies: GCP zones end in "-a",
// AWS zones in a letter after the region ("us-east-1a").
func regionOf(e Endpoint) string {
	if e.Region != "" {
		return e.Region
	}
	z := e.Zone
	if i := strings.LastIndexByte(z, '-'); i > 0 && len(z)-i == 2 {
		return z[:i]
	}
	if len(z) > 1 {
		last, prev := z[len(z)-1], z[len(z)-2]
		if last >= 'a' && last <= 'z' && prev >= '0' && prev <= '9' {
			return z[:len(z)-1]
		}
	}
	return z
}

// continentPrefixes maps region-name prefixes (GCP, AWS, Azure-style) to a continent.
var continentPrefixes = []struct{ prefix, continent string }{
	{"us-", "north-america"}, {"northamerica-", "north-america"}, {"ca-", "north-america"},
	{"europe-", "europe"}, {"eu-", "europe"},
	{"asia-", "asia"}, {"ap-", "asia"},
	{"australia-", "oceania"},
	{"southamerica-", "south-america"}, {"sa-", "south-america"},
	{"me-", "middle-east"}, {"il-", "middle-east"},
	{"africa-", "africa"}, {"af-", "africa"},
}

// continentOf is the continent of a region; an unrecognised region is its own continent, so
// traffic to it is priced as inter-continental.
func continentOf(region string) string {
	r := strings.ToLower(region)
	for _, p := range continentPrefixes {
		if strings.HasPrefix(r, p.prefix) {
			return p.continent
		}
	}
	return r
}
