package planner

import (
	"fmt"
	"math"
	"sort"

	"github.com/schooner-ml/schooner/gpu"
)

// poolKey is a pool without its GPU count: what identifies it when the same offering is
// seen twice (a replan's survivors and new offers) and in the Replanner's cache key.
type poolKey Pool

func keyOf(p Pool) poolKey {
	p.GPUs = 0
	return poolKey(p)
}

// class is every offered GPU at one network endpoint (GPU type, machine size, zone, region):
// to the simulator they are interchangeable, so the search counts them together and only
// prices tell them apart. Its pools are sorted cheapest first, so a plan that takes n GPUs
// of a class pays for the n cheapest.
type class struct {
	ep    Endpoint
	pools []Pool
	// preferred marks pools (by index) a replan should keep when prices tie.
	preferred []bool
	gpus      int
	// linear is true when every GPU of the class costs the same, so the cost of a plan is a
	// sum over its stages.
	linear   bool
	minPrice float64
	memLimit float64 // 0: no datasheet, as the simulator treats it (never out of memory)
	// subs are the endpoints the class's GPUs sit at: one, unless a large offer's zones and
	// machine sizes of one region were merged (H6, see mergeRegions); ep is then the sub with
	// the most GPUs.
	subs []sub
}

// sub is the GPUs of a class at one endpoint (zone and machine size).
type sub struct {
	ep   Endpoint
	gpus int
}

// holds reports whether a replica of TP tp fits the sub's machines.
func (u sub) holds(tp int) bool {
	n := u.ep.GPUsPerNode
	return tp <= n && n%tp == 0 && u.gpus >= tp
}

// units is how many GPUs per replica the class can give all stages of d replicas together.
func (c *class) units(d int) int {
	total := 0
	for _, u := range c.subs {
		total += u.gpus / d
	}
	return total
}

// stageFits reports whether one stage of d replicas of TP tp fits one endpoint of c (a
// stage's replicas share one).
func (c *class) stageFits(d, tp int) bool {
	for _, u := range c.subs {
		if u.holds(tp) && u.gpus >= d*tp {
			return true
		}
	}
	return false
}

// endpointFor is the endpoint with the most GPUs that holds replicas of TP tp: the one the
// programme's link estimates use.
func (c *class) endpointFor(tp int) (Endpoint, bool) {
	best := -1
	for i, u := range c.subs {
		if u.holds(tp) && (best < 0 || u.gpus > c.subs[best].gpus) {
			best = i
		}
	}
	if best < 0 {
		return Endpoint{}, false
	}
	return c.subs[best].ep, true
}

// hourly is the price of the n cheapest GPUs of c, USD per hour.
func (c *class) hourly(n int) float64 {
	if c.linear {
		return float64(n) * c.minPrice
	}
	var usd float64
	for _, p := range c.pools {
		take := min(n, p.GPUs)
		usd += float64(take) * p.USDPerGPUHour
		n -= take
		if n == 0 {
			break
		}
	}
	return usd
}

// keepOrder is the class's pools with the preferred ones first (cheapest first within each
// group).
func (c *class) keepOrder() []Pool {
	out := make([]Pool, 0, len(c.pools))
	for _, want := range []bool{true, false} {
		for i, p := range c.pools {
			if c.preferred[i] == want {
				out = append(out, p)
			}
		}
	}
	return out
}

// buildClasses groups usable pools by endpoint. A pool's GPUs are rounded down to whole
// machines; pools of GPUs the model has no profile for are skipped (and named in skipped).
func buildClasses(m *ModelProfile, pools []Pool, preferred map[poolKey]bool) (classes []*class, skipped []string, err error) {
	merged := map[poolKey]int{}
	var order []poolKey
	for i, p := range pools {
		switch {
		case p.GPU == "":
			return nil, nil, fmt.Errorf("pool %d (%s %s) has no GPU type", i, p.Zone, p.InstanceType)
		case p.Zone == "":
			return nil, nil, fmt.Errorf("pool %d (%s %s) has no zone", i, p.GPU, p.InstanceType)
		case p.GPUs < 0:
			return nil, nil, fmt.Errorf("pool %d (%s in %s) offers %d GPUs", i, p.GPU, p.Zone, p.GPUs)
		case p.USDPerGPUHour < 0 || math.IsNaN(p.USDPerGPUHour) || math.IsInf(p.USDPerGPUHour, 0):
			return nil, nil, fmt.Errorf("pool %d (%s in %s) has price %g per GPU-hour", i, p.GPU, p.Zone, p.USDPerGPUHour)
		}
		if p.GPUsPerNode <= 0 {
			p.GPUsPerNode = 1
		}
		if c := m.Compute[p.GPU]; c == nil || len(c.Times) == 0 {
			skipped = appendOnce(skipped, string(p.GPU))
			continue
		}
		n := p.GPUs / p.GPUsPerNode * p.GPUsPerNode
		if n == 0 {
			continue
		}
		k := keyOf(p)
		if _, ok := merged[k]; !ok {
			order = append(order, k)
		}
		merged[k] += n
	}
	byEP := map[Endpoint]*class{}
	for _, k := range order {
		p := Pool(k)
		p.GPUs = merged[k]
		ep := p.Endpoint()
		c := byEP[ep]
		if c == nil {
			c = &class{ep: ep, subs: []sub{{ep: ep}}}
			if spec, ok := Spec(p.GPU); ok {
				c.memLimit = spec.MemoryBytes
			}
			byEP[ep] = c
			classes = append(classes, c)
		}
		c.pools = append(c.pools, p)
		c.gpus += p.GPUs
		c.subs[0].gpus += p.GPUs
	}
	for _, c := range classes {
		c.sortPools(preferred)
	}
	sort.SliceStable(classes, func(i, j int) bool { return endpointLess(classes[i].ep, classes[j].ep) })
	return classes, skipped, nil
}

// mergeRegionsAbove is the size of offer (GPUs) above which, when there are more than four
// classes, the classes of one GPU type in one region (every zone, every machine size) are
// merged into one (Sailor's H6): the programme then counts GPUs per region and estimates
// links from the region's largest endpoint, and each stage is placed on an endpoint of its
// region afterwards (beside the stage before it when there is room, else where most GPUs
// are left). Below it every endpoint is its own class and the search is exact.
const mergeRegionsAbove = 128

// shouldMerge applies the rule of mergeRegionsAbove.
func shouldMerge(classes []*class) bool {
	total := 0
	groups := map[[2]string]bool{}
	for _, c := range classes {
		total += c.gpus
		groups[[2]string{string(c.ep.GPU), c.ep.Region}] = true
	}
	return total > mergeRegionsAbove && len(classes) > 4 && len(groups) < len(classes)
}

// mergeRegions merges the classes of one GPU type and region.
func mergeRegions(classes []*class, preferred map[poolKey]bool) []*class {
	byKey := map[[2]string]*class{}
	var out []*class
	for _, c := range classes {
		k := [2]string{string(c.ep.GPU), c.ep.Region}
		m := byKey[k]
		if m == nil {
			cp := *c
			cp.pools = append([]Pool(nil), c.pools...)
			cp.subs = append([]sub(nil), c.subs...)
			byKey[k] = &cp
			out = append(out, &cp)
			continue
		}
		m.pools = append(m.pools, c.pools...)
		m.subs = append(m.subs, c.subs...)
		m.gpus += c.gpus
	}
	for _, c := range out {
		best := 0
		for i, u := range c.subs {
			if u.gpus > c.subs[best].gpus {
				best = i
			}
		}
		c.ep = c.subs[best].ep
		c.sortPools(preferred)
	}
	return out
}

// sortPools orders the pools cheapest first, preferred first among equal prices, and
// derives the class's pricing.
func (c *class) sortPools(preferred map[poolKey]bool) {
	sort.SliceStable(c.pools, func(i, j int) bool {
		a, b := c.pools[i], c.pools[j]
		if a.USDPerGPUHour != b.USDPerGPUHour {
			return a.USDPerGPUHour < b.USDPerGPUHour
		}
		pa, pb := preferred[keyOf(a)], preferred[keyOf(b)]
		if pa != pb {
			return pa
		}
		return poolLess(a, b)
	})
	c.linear = true
	c.minPrice = c.pools[0].USDPerGPUHour
	c.preferred = c.preferred[:0]
	for _, p := range c.pools {
		c.preferred = append(c.preferred, preferred[keyOf(p)])
		if p.USDPerGPUHour != c.minPrice {
			c.linear = false
		}
	}
}

func poolLess(a, b Pool) bool {
	if a.Provider != b.Provider {
		return a.Provider < b.Provider
	}
	if a.InstanceType != b.InstanceType {
		return a.InstanceType < b.InstanceType
	}
	return !a.Spot && b.Spot
}

func appendOnce(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// option is one way to run a stage: a class and a TP degree. Every replica of the stage
// uses it (H1: a replica is TP GPUs of one type on one machine).
type option struct {
	cls int
	tp  int
	g   gpu.Type
	ep  Endpoint
}

// mbsTables hold, for one micro-batch size, everything about stages that does not depend on
// the data-parallel degree: compute, update and memory of every (option, first, last), and
// the p2p times between every pair of options at every boundary.
type mbsTables struct {
	mbs  int
	L    int
	opts []option
	// comp and upd are indexed [o][a][b] (flattened): forward+backward and optimizer time of
	// layers a..b under option o.
	comp, upd []float64
	// fitR is, per [o][a][b], the largest number of in-flight microbatches whose activations
	// fit beside the weights (0: not even one; L: any number).
	fitR []int16
	// act[o][o2][b] is the time a replica under o, whose stage ends at layer b, sends its
	// activations to the next stage under o2; grad the time the gradients take back.
	act, grad []float64
	// self[o] is the link between two machines of option o's endpoint as each GPU of one
	// sees it during the all-reduce, when all of them send (Link.SharedBy).
	self []Link
	// bytes[o][b] is what crosses the boundary after layer b when the sender runs o.
	bytes []float64
	// egress[o][o2] is USD per GB for one byte each way between the options' zones.
	egress []float64
	// wPre[a] is a lower bound on the compute of layers 0..a-1 per microbatch on any option;
	// layerGPUSec and layerUSD are, per layer, the least GPU-seconds and GPU-dollar-seconds
	// any option spends on it (bounds on what a whole plan must spend).
	wPre           []float64
	gpuSec, usdSec float64
	maxTP          []int // per class, the largest TP of any option
	minLayer       []float64
	// rho[k] bounds how much of the per-layer minimum work one GPU of class k gets through
	// per unit of stage time, and etaMax the same for a whole stage: a prefix of layers
	// 0..a-1 on stages no slower than S has wPre[a] ≤ S·min(Σ_k GPUs_k·rho[k], a·etaMax).
	rho    []float64
	etaMax float64
	// minFitR[a] is the smallest in-flight limit of any stage that fits and ends before
	// layer a: a suffix's stage count matters to the prefix only when it can reach it.
	minFitR []int
	// usdPre[a] is a lower bound on Σ TP·price·compute of layers 0..a-1 on any options;
	// minUnits[a] the fewest GPUs per replica that can hold layers 0..a-1 in memory.
	usdPre   []float64
	minUnits []int
}

func (t *mbsTables) idx3(o, a, b int) int { return (o*t.L+a)*t.L + b }

// buildTables prepares mbs's tables, or returns nil when no option exists for mbs.
func (s *search) buildTables(mbs int) *mbsTables {
	L := s.L
	t := &mbsTables{mbs: mbs, L: L}
	for k, c := range s.classes {
		prof := s.req.Model.Compute[c.ep.GPU]
		tps := make([]int, 0, len(prof.Times))
		for tp, byMBS := range prof.Times {
			if _, ok := byMBS[mbs]; !ok {
				continue
			}
			if _, ok := c.endpointFor(tp); !ok {
				continue
			}
			if _, ok := s.req.Model.Mem[tp]; !ok {
				continue
			}
			if _, _, ok := s.sim.StageCompute(c.ep.GPU, tp, mbs, 0, L-1); !ok {
				continue
			}
			tps = append(tps, tp)
		}
		sort.Ints(tps)
		for _, tp := range tps {
			ep, _ := c.endpointFor(tp)
			t.opts = append(t.opts, option{cls: k, tp: tp, g: c.ep.GPU, ep: ep})
		}
	}
	O := len(t.opts)
	if O == 0 {
		return nil
	}
	t.comp = make([]float64, O*L*L)
	t.upd = make([]float64, O*L*L)
	t.fitR = make([]int16, O*L*L)
	t.bytes = make([]float64, O*L)
	t.maxTP = make([]int, len(s.classes))
	t.minLayer = make([]float64, L)
	for l := range t.minLayer {
		t.minLayer[l] = math.Inf(1)
	}
	layerGPU := make([]float64, L)
	layerUSD := make([]float64, L)
	for l := range layerGPU {
		layerGPU[l], layerUSD[l] = math.Inf(1), math.Inf(1)
	}
	for o, op := range t.opts {
		t.maxTP[op.cls] = max(t.maxTP[op.cls], op.tp)
		limit := s.classes[op.cls].memLimit
		mem := s.req.Model.Mem[op.tp]
		for b := 0; b < L; b++ {
			t.bytes[o*L+b] = mem[b].ActOutputFloats * float64(mbs) * BytesPerFloat
		}
		price := s.classes[op.cls].minPrice
		for a := 0; a < L; a++ {
			for b := a; b < L; b++ {
				c, u, _ := s.sim.StageCompute(op.g, op.tp, mbs, a, b)
				i := t.idx3(o, a, b)
				t.comp[i], t.upd[i] = c, u
				t.fitR[i] = s.fitInFlight(op, limit, mbs, a, b)
			}
			c := t.comp[t.idx3(o, a, a)]
			t.minLayer[a] = math.Min(t.minLayer[a], c)
			layerGPU[a] = math.Min(layerGPU[a], c*float64(op.tp))
			layerUSD[a] = math.Min(layerUSD[a], c*float64(op.tp)*price)
		}
	}
	t.wPre = make([]float64, L+1)
	t.usdPre = make([]float64, L+1)
	for l := 0; l < L; l++ {
		t.wPre[l+1] = t.wPre[l] + t.minLayer[l]
		t.usdPre[l+1] = t.usdPre[l] + layerUSD[l]
		t.gpuSec += layerGPU[l]
		t.usdSec += layerUSD[l]
	}
	t.minUnits = make([]int, L+1)
	for a := 1; a <= L; a++ {
		t.minUnits[a] = math.MaxInt / 2
		for o, op := range t.opts {
			for first := 0; first < a; first++ {
				if t.fitR[t.idx3(o, first, a-1)] > 0 {
					t.minUnits[a] = min(t.minUnits[a], t.minUnits[first]+op.tp)
				}
			}
		}
	}
	t.rho = make([]float64, len(s.classes))
	for o, op := range t.opts {
		eta := 0.0
		for l := 0; l < L; l++ {
			if c := t.comp[t.idx3(o, l, l)]; c > 0 {
				eta = math.Max(eta, t.minLayer[l]/c)
			} else {
				eta = math.Inf(1)
			}
		}
		t.etaMax = math.Max(t.etaMax, eta)
		t.rho[op.cls] = math.Max(t.rho[op.cls], eta/float64(op.tp))
	}
	t.minFitR = make([]int, L+1)
	t.minFitR[0] = math.MaxInt
	for a := 1; a <= L; a++ {
		t.minFitR[a] = t.minFitR[a-1]
		for o := range t.opts {
			for first := 0; first < a; first++ {
				if r := int(t.fitR[t.idx3(o, first, a-1)]); r > 0 && r < t.minFitR[a] {
					t.minFitR[a] = r
				}
			}
		}
	}
	for _, op := range t.opts {
		t.self = append(t.self, s.req.Network.Between(op.ep, op.ep).SharedBy(op.ep.GPUsPerNode))
	}
	t.act = make([]float64, O*O*L)
	t.grad = make([]float64, O*O*L)
	t.egress = make([]float64, O*O)
	for o, op := range t.opts {
		for o2, op2 := range t.opts {
			fwd := s.req.Network.Between(op.ep, op2.ep)
			back := s.req.Network.Between(op2.ep, op.ep)
			egress := 0.0
			if op.ep.Zone != op2.ep.Zone {
				egress = s.req.Network.EgressUSDPerGB(op.ep, op2.ep) + s.req.Network.EgressUSDPerGB(op2.ep, op.ep)
			}
			if c := s.classes[op.cls]; op.cls == op2.cls && len(c.subs) > 1 {
				// two stages of a merged class may land in different zones: count on it
				fwd, back, egress = s.acrossZones(c, op.ep, op2.ep)
			}
			t.egress[o*O+o2] = egress
			for b := 0; b < L-1; b++ {
				bytes := t.bytes[o*L+b]
				t.act[(o*O+o2)*L+b] = fwd.Time(bytes)
				t.grad[(o*O+o2)*L+b] = back.Time(bytes)
			}
		}
	}
	return t
}

// acrossZones is the slowest link (each way) and the dearest egress (both ways, USD per GB)
// between two stages of a merged class, at endpoints like a and b but in any two of its
// zones (the same one only if the class has a single zone).
func (s *search) acrossZones(c *class, a, b Endpoint) (fwd, back Link, egress float64) {
	var zones []string
	for _, u := range c.subs {
		zones = appendOnce(zones, u.ep.Zone)
	}
	if len(zones) == 1 {
		return s.req.Network.Between(a, b), s.req.Network.Between(b, a), 0
	}
	first := true
	for _, za := range zones {
		for _, zb := range zones {
			if za == zb {
				continue
			}
			x, y := a, b
			x.Zone, y.Zone = za, zb
			l := s.req.Network.Between(x, y)
			if first || l.Time(1e7) > fwd.Time(1e7) {
				fwd, back = l, s.req.Network.Between(y, x)
			}
			first = false
			egress = math.Max(egress, s.req.Network.EgressUSDPerGB(x, y)+s.req.Network.EgressUSDPerGB(y, x))
		}
	}
	return fwd, back, egress
}

// fitInFlight is the largest number of microbatches in flight (1F1B keeps numStages −
// stageIndex of them on a stage) with which layers a..b fit on op's GPU, capped at the
// number of layers, which bounds the number of stages.
func (s *search) fitInFlight(op option, limit float64, mbs, a, b int) int16 {
	if limit <= 0 {
		return int16(s.L)
	}
	fits := func(r int) bool {
		m, ok := s.sim.StagePeakMemory(op.g, op.tp, mbs, a, b, 0, r, r)
		return ok && m <= limit
	}
	if !fits(1) {
		return 0
	}
	if fits(s.L) {
		return int16(s.L)
	}
	lo, hi := 1, s.L // fits(lo), !fits(hi)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return int16(lo)
}
