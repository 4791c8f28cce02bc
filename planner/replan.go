package planner

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Replanner plans again when the GPUs a job can have change: a preemption takes some away,
// the market offers others. An unchanged availability (same model, network, pools with the
// same counts and prices, objective, budget and batch) returns the result computed before,
// the same *Result, at once, as Sailor does; concurrent requests for one key share one
// search. The zero value is ready to use and safe for concurrent use.
type Replanner struct {
	// MaxEntries bounds the cache (oldest dropped first); 0 means 64.
	MaxEntries int

	mu      sync.Mutex
	entries map[string]*replanEntry
	order   []string
	sims    map[simKey]*Sim
}

type replanEntry struct {
	done chan struct{}
	res  *Result
	err  error
}

type simKey struct {
	m *ModelProfile
	n *Network
}

// Plan is Search with the cache.
func (r *Replanner) Plan(req Request) (*Result, error) {
	return r.cached(req, "", func(req Request) (*Result, error) { return Search(req) })
}

// Replan plans with the GPUs the job still holds (survivors, priced as given) and new
// offers, merged into one set of pools; req.Pools is ignored. Among plans whose objective
// is within 1% of the best, it prefers the one that keeps the most surviving GPUs, then the
// one closest to current (which may be nil), so that a replan moves as little as it can.
func (r *Replanner) Replan(current *Plan, survivors []Pool, offers []Pool, req Request) (*Result, error) {
	req.Pools = append(append([]Pool(nil), survivors...), offers...)
	req.preferred = map[poolKey]bool{}
	for _, p := range survivors {
		req.preferred[keyOf(p)] = true
	}
	extra := "replan"
	if current != nil {
		extra += "|" + planKey(current)
	}
	return r.cached(req, extra, func(req Request) (*Result, error) { return replan(req, current, survivors) })
}

// cached runs search once per canonical key of req (plus extra) and remembers its result.
func (r *Replanner) cached(req Request, extra string, search func(Request) (*Result, error)) (*Result, error) {
	key := canonicalKey(req) + "|" + extra
	r.mu.Lock()
	if r.entries == nil {
		r.entries = map[string]*replanEntry{}
		r.sims = map[simKey]*Sim{}
	}
	if e, ok := r.entries[key]; ok {
		r.mu.Unlock()
		<-e.done
		return e.res, e.err
	}
	e := &replanEntry{done: make(chan struct{})}
	r.entries[key] = e
	r.order = append(r.order, key)
	limit := r.MaxEntries
	if limit <= 0 {
		limit = 64
	}
	for len(r.order) > limit {
		delete(r.entries, r.order[0])
		r.order = r.order[1:]
	}
	if req.Model != nil && req.Network != nil {
		sk := simKey{m: req.Model, n: req.Network}
		if r.sims[sk] == nil {
			r.sims[sk] = NewSim(req.Model, req.Network)
		}
		req.sim = r.sims[sk]
	}
	r.mu.Unlock()

	e.res, e.err = search(req)
	close(e.done)
	return e.res, e.err
}

// canonicalKey identifies a request by what its result depends on: the model (name and
// profile), the network, the pools sorted with equal offerings merged, objective,
// constraints, batch sizes and K.
func canonicalKey(req Request) string {
	var b strings.Builder
	name := ""
	if req.Model != nil {
		name = req.Model.Name
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	obj, k := req.Objective, req.TopK
	if obj == "" {
		obj = MaxThroughput
	}
	if k <= 0 {
		k = DefaultTopK
	}
	fmt.Fprintf(&b, "%s@%p|net@%p|%s|usd<=%s|it>=%s|gbs=%d|k=%d|mbs=%v", name, req.Model, req.Network,
		obj, f(req.MaxUSDPerIteration), f(req.MinItersPerSec), req.GlobalBatch, k, sortedInts(req.MicroBatches))
	counts := map[poolKey]int{}
	for _, p := range req.Pools {
		counts[keyOf(p)] += p.GPUs
	}
	pools := make([]string, 0, len(counts))
	for k, n := range counts {
		pools = append(pools, fmt.Sprintf("%s/%s/%s/%s/%s/%d/%t/%s=%d", k.Provider, k.Region, k.Zone, k.InstanceType, k.GPU,
			k.GPUsPerNode, k.Spot, f(k.USDPerGPUHour), n))
	}
	sort.Strings(pools)
	b.WriteString("|pools:")
	b.WriteString(strings.Join(pools, ","))
	if len(req.preferred) > 0 {
		var pref []string
		for k := range req.preferred {
			pref = append(pref, fmt.Sprintf("%s/%s/%s/%s/%d/%s", k.Provider, k.Zone, k.InstanceType, k.GPU, k.GPUsPerNode, f(k.USDPerGPUHour)))
		}
		sort.Strings(pref)
		b.WriteString("|keep:")
		b.WriteString(strings.Join(pref, ","))
	}
	return b.String()
}

func sortedInts(s []int) []int {
	out := append([]int(nil), s...)
	sort.Ints(out)
	return out
}

// planKey identifies a plan's layout and placement.
func planKey(p *Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d", p.GlobalBatch, p.MicroBatch)
	for _, st := range p.Stages {
		fmt.Fprintf(&b, "|%d-%d", st.FirstLayer, st.LastLayer)
		for _, r := range st.Replicas {
			fmt.Fprintf(&b, ";%s,%d,%s,%s,%d,%s,%g", r.GPU, r.TP, r.Zone, r.Region, r.GPUsPerNode, r.InstanceType, r.USDPerGPUHour)
		}
	}
	return b.String()
}

// replan searches the merged pools, then picks among near-best plans the one that keeps
// the most survivors.
func replan(req Request, current *Plan, survivors []Pool) (*Result, error) {
	start := time.Now()
	want := req.TopK
	if want <= 0 {
		want = DefaultTopK
	}
	req.TopK = max(want, 10)
	s, err := newSearch(req)
	if err != nil {
		return nil, err
	}
	evaluated := s.explore()
	var cands []Candidate
	seen := map[string]bool{}
	for _, f := range s.top.list() {
		for _, keep := range []bool{false, true} {
			p, ok := s.materialiseFrom(f, keep)
			if !ok || seen[planKey(p)] {
				continue
			}
			seen[planKey(p)] = true
			est, err := s.sim.Simulate(p)
			if err != nil || !est.Fits || !s.meets(est) {
				continue
			}
			cands = append(cands, Candidate{Plan: *p, Estimate: est})
		}
	}
	if len(cands) == 0 {
		return nil, s.explainNothing()
	}
	sort.SliceStable(cands, func(i, j int) bool { return s.better(cands[i].Estimate, cands[j].Estimate) })

	held := map[string]int{}
	for _, p := range survivors {
		held[replicaPoolKey(p.GPU, p.Zone, p.Region, p.GPUsPerNode, p.InstanceType, p.USDPerGPUHour)] += p.GPUs
	}
	kept := func(p *Plan) int {
		left := map[string]int{}
		for k, v := range held {
			left[k] = v
		}
		n := 0
		for _, st := range p.Stages {
			for _, r := range st.Replicas {
				k := replicaPoolKey(r.GPU, r.Zone, r.Region, r.GPUsPerNode, r.InstanceType, r.USDPerGPUHour)
				if left[k] >= r.TP {
					left[k] -= r.TP
					n += r.TP
				}
			}
		}
		return n
	}
	bestObj := objectiveValue(req.Objective, cands[0].Estimate)
	pick := 0
	for i := 1; i < len(cands); i++ {
		if objectiveValue(req.Objective, cands[i].Estimate) > bestObj*1.01 {
			continue
		}
		ki, kp := kept(&cands[i].Plan), kept(&cands[pick].Plan)
		if ki > kp || (ki == kp && current != nil && sameLayout(&cands[i].Plan, current) && !sameLayout(&cands[pick].Plan, current)) {
			pick = i
		}
	}
	ordered := append([]Candidate{cands[pick]}, append(append([]Candidate(nil), cands[:pick]...), cands[pick+1:]...)...)
	if len(ordered) > want {
		ordered = ordered[:want]
	}
	res := &Result{Best: ordered[0], Next: ordered[1:], Evaluated: evaluated}
	res.Rejected = s.rejections(res)
	res.Elapsed = time.Since(start)
	return res, nil
}

func replicaPoolKey(g any, zone, region string, perNode int, instance string, usd float64) string {
	return fmt.Sprintf("%v/%s/%s/%d/%s/%g", g, zone, region, perNode, instance, usd)
}

// objectiveValue is the quantity the objective minimises: seconds per iteration, or USD.
func objectiveValue(o Objective, e Estimate) float64 {
	if o == MinCost {
		return e.USDPerIteration
	}
	return e.IterTime
}

// sameLayout reports whether two plans split the model alike, with the same D and
// micro-batch and the same GPU type and TP per stage.
func sameLayout(a, b *Plan) bool {
	if a.MicroBatch != b.MicroBatch || len(a.Stages) != len(b.Stages) || a.DP() != b.DP() {
		return false
	}
	for i := range a.Stages {
		x, y := a.Stages[i], b.Stages[i]
		if x.FirstLayer != y.FirstLayer || x.LastLayer != y.LastLayer || x.Replicas[0].GPU != y.Replicas[0].GPU || x.Replicas[0].TP != y.Replicas[0].TP {
			return false
		}
	}
	return true
}
