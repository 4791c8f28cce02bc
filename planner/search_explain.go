package planner

import (
	"fmt"
	"math"
	"strings"
)

// explainNothing says why no plan was found: a budget or throughput floor nothing meets
// (with the best that is achievable), a model that fits no GPU (with the smallest
// shortfall), or too few GPUs (with how many the smallest plan needs).
func (s *search) explainNothing() error {
	if s.req.MaxUSDPerIteration > 0 || s.req.MinItersPerSec > 0 {
		cheapest := s.unconstrained(MinCost)
		fastest := s.unconstrained(MaxThroughput)
		if cheapest != nil && fastest != nil {
			c, f := cheapest.Best.Estimate, fastest.Best.Estimate
			var parts []string
			if s.req.MaxUSDPerIteration > 0 && c.USDPerIteration > s.req.MaxUSDPerIteration {
				parts = append(parts, fmt.Sprintf("no plan costs at most $%.6g per iteration: the cheapest feasible plan costs $%.6g (%s)",
					s.req.MaxUSDPerIteration, c.USDPerIteration, SummarizePlan(&cheapest.Best.Plan)))
			}
			if s.req.MinItersPerSec > 0 && f.Throughput < s.req.MinItersPerSec {
				parts = append(parts, fmt.Sprintf("no plan reaches %.6g iterations/s: the best achievable is %.6g iterations/s (%s)",
					s.req.MinItersPerSec, f.Throughput, SummarizePlan(&fastest.Best.Plan)))
			}
			if len(parts) == 0 {
				parts = append(parts, fmt.Sprintf("no plan meets both the budget of $%.6g per iteration and the floor of %.6g iterations/s: "+
					"the cheapest plan costs $%.6g at %.6g iterations/s, the fastest gives %.6g iterations/s at $%.6g",
					s.req.MaxUSDPerIteration, s.req.MinItersPerSec, c.USDPerIteration, c.Throughput, f.Throughput, f.USDPerIteration))
			}
			return fmt.Errorf("%w: %s", ErrNoPlan, strings.Join(parts, "; "))
		}
	}
	if err := s.memoryShortfall(); err != nil {
		return err
	}
	return s.capacityShortfall()
}

// unconstrained searches again without budget and floor, for explanations.
func (s *search) unconstrained(o Objective) *Result {
	req := s.req
	req.Objective, req.MaxUSDPerIteration, req.MinItersPerSec, req.TopK = o, 0, 0, 1
	req.sim = s.sim
	sub, err := newSearch(req)
	if err != nil {
		return nil
	}
	sub.explore()
	cands := sub.candidates(sub.top.list())
	if len(cands) == 0 {
		return nil
	}
	return &Result{Best: cands[0]}
}

// memoryShortfall reports the layer that fits no offered GPU even alone, with one
// microbatch in flight, at the best TP and smallest micro-batch, if there is one: no plan
// can hold it, and its overflow is the smallest shortfall of any plan.
func (s *search) memoryShortfall() error {
	worst := math.Inf(-1)
	var worstLayer int
	var worstDesc string
	for l := 0; l < s.L; l++ {
		best := math.Inf(1)
		var desc string
		for _, t := range s.tables {
			for _, op := range t.opts {
				limit := s.classes[op.cls].memLimit
				if limit <= 0 {
					best = math.Inf(-1)
					continue
				}
				m, ok := s.sim.StagePeakMemory(op.g, op.tp, t.mbs, l, l, 0, 1, 1)
				if !ok {
					continue
				}
				if over := m - limit; over < best {
					best = over
					desc = fmt.Sprintf("%.1f GiB per GPU on %s at TP %d, micro-batch %d, which has %.1f GiB",
						m/gib, op.g, op.tp, t.mbs, limit/gib)
				}
			}
		}
		if best > worst {
			worst, worstLayer, worstDesc = best, l, desc
		}
	}
	if worst <= 0 {
		return nil
	}
	return fmt.Errorf("%w: %s does not fit in the memory of any offered GPU: even alone in a stage, layer %d needs at least %s (%.2f GiB short)",
		ErrNoPlan, s.req.Model.Name, worstLayer, worstDesc, worst/gib)
}

// capacityShortfall says how many GPUs the smallest plan that fits needs, one pipeline
// (D = 1) with as many stages as it likes on any offered GPU types.
func (s *search) capacityShortfall() error {
	usable := 0
	for _, c := range s.classes {
		usable += c.gpus
	}
	best := math.MaxInt
	var bestDesc string
	for _, t := range s.tables {
		n := (s.req.GlobalBatch + t.mbs - 1) / t.mbs
		L := t.L
		// g[r][a]: fewest GPUs for layers a..L-1 in exactly r stages.
		const inf = math.MaxInt / 4
		g := make([][]int, L+1)
		for r := range g {
			g[r] = make([]int, L+1)
			for a := range g[r] {
				g[r][a] = inf
			}
		}
		g[0][L] = 0
		for r := 1; r <= L; r++ {
			for a := L - 1; a >= 0; a-- {
				for o, op := range t.opts {
					for b := a; b < L; b++ {
						if int(t.fitR[t.idx3(o, a, b)]) < min(r, n) {
							break
						}
						if rest := g[r-1][b+1]; rest < inf && rest+op.tp < g[r][a] {
							g[r][a] = rest + op.tp
						}
					}
				}
			}
			if g[r][0] < best {
				best = g[r][0]
				bestDesc = fmt.Sprintf("%d pipeline stages at micro-batch %d", r, t.mbs)
			}
		}
	}
	if best == math.MaxInt {
		return fmt.Errorf("%w: no way to place %s on the offered GPUs fits in memory", ErrNoPlan, s.req.Model.Name)
	}
	return fmt.Errorf("%w: not enough GPUs: the smallest plan of %s that fits needs %d GPUs (%s); the pools offer %d usable GPUs (%s) in groups that cannot hold it",
		ErrNoPlan, s.req.Model.Name, best, bestDesc, usable, s.classSummary())
}

func (s *search) classSummary() string {
	parts := make([]string, len(s.classes))
	for i, c := range s.classes {
		parts[i] = fmt.Sprintf("%d× %s in %s", c.gpus, c.ep.GPU, c.ep.Zone)
	}
	return strings.Join(parts, ", ")
}

// rejections lists the main alternatives the search turned down, and why.
func (s *search) rejections(res *Result) []Rejection {
	var out []Rejection
	best := &res.Best
	// Whole model on one replica of each GPU type, if that does not fit: why the plan pipelines.
	seen := map[string]bool{}
	for _, t := range s.tables {
		for _, op := range t.opts {
			if seen[string(op.g)] {
				continue
			}
			var widest option
			for _, o2 := range t.opts {
				if o2.g == op.g && o2.tp > widest.tp {
					widest = o2
				}
			}
			seen[string(op.g)] = true
			limit := s.classes[widest.cls].memLimit
			m, ok := s.sim.StagePeakMemory(widest.g, widest.tp, t.mbs, 0, s.L-1, 0, 1, 1)
			if ok && limit > 0 && m > limit {
				out = append(out, Rejection{
					Summary: fmt.Sprintf("P=1 on %s (TP %d, micro-batch %d)", widest.g, widest.tp, t.mbs),
					Reason:  RejectOOM,
					Detail:  fmt.Sprintf("the whole model needs %.1f GiB per GPU, %s has %.1f GiB", m/gib, widest.g, limit/gib),
				})
			}
		}
	}
	if s.req.MaxUSDPerIteration > 0 {
		if r, ok := s.limitRejection(MaxThroughput, RejectBudget, func(e Estimate) (bool, string) {
			return e.USDPerIteration > s.req.MaxUSDPerIteration*(1+1e-9),
				fmt.Sprintf("%.4g iterations/s but $%.4g per iteration, over the budget of $%.4g (chosen: %.4g iterations/s)",
					e.Throughput, e.USDPerIteration, s.req.MaxUSDPerIteration, best.Estimate.Throughput)
		}); ok {
			out = append(out, r)
		}
	}
	if s.req.MinItersPerSec > 0 {
		if r, ok := s.limitRejection(MinCost, RejectMinThroughput, func(e Estimate) (bool, string) {
			return e.Throughput < s.req.MinItersPerSec*(1-1e-9),
				fmt.Sprintf("$%.4g per iteration but only %.4g iterations/s, under the floor of %.4g (chosen: $%.4g per iteration)",
					e.USDPerIteration, e.Throughput, s.req.MinItersPerSec, best.Estimate.USDPerIteration)
		}); ok {
			out = append(out, r)
		}
	}
	if r, ok := s.networkRejection(best); ok {
		out = append(out, r)
	}
	if r, ok := s.capacityRejection(best); ok {
		out = append(out, r)
	}
	if len(s.skipped) > 0 {
		out = append(out, Rejection{
			Summary: "GPUs of " + strings.Join(s.skipped, ", "),
			Reason:  RejectCapacity,
			Detail:  fmt.Sprintf("%s has no compute profile for them, so they cannot be planned on", s.req.Model.Name),
		})
	}
	return out
}

// limitRejection reports the plan the search would pick for objective o without the
// request's limits when that plan breaks one of them: breaks says whether the estimate does
// and why. The budget and the throughput floor are explained this same way.
func (s *search) limitRejection(o Objective, reason string, breaks func(Estimate) (bool, string)) (Rejection, bool) {
	r := s.unconstrained(o)
	if r == nil {
		return Rejection{}, false
	}
	broken, detail := breaks(r.Best.Estimate)
	if !broken {
		return Rejection{}, false
	}
	return Rejection{Summary: SummarizePlan(&r.Best.Plan), Reason: reason, Detail: detail}, true
}

// networkRejection reports the best plan found that spreads over more regions (or zones)
// than the chosen one: the network is why it lost.
func (s *search) networkRejection(best *Candidate) (Rejection, bool) {
	f := s.top.widerThan(spread(&best.Plan))
	if f == nil {
		return Rejection{}, false
	}
	p, ok := s.materialise(f)
	if !ok {
		return Rejection{}, false
	}
	e, err := s.sim.Simulate(p)
	if err != nil || !e.Fits {
		return Rejection{}, false
	}
	return Rejection{
		Summary: SummarizePlan(p),
		Reason:  RejectNetwork,
		Detail: fmt.Sprintf("spreads over %s: %.4g iterations/s at $%.4g per iteration (egress $%.4g), against %.4g at $%.4g for the chosen plan",
			zonesOf(p), e.Throughput, e.USDPerIteration, e.EgressUSDPerIteration, best.Estimate.Throughput, best.Estimate.USDPerIteration),
	}, true
}

// capacityRejection reports, for throughput, that the chosen layout would run faster with
// more pipelines, and which GPUs are missing for that.
func (s *search) capacityRejection(best *Candidate) (Rejection, bool) {
	if s.req.Objective != MaxThroughput {
		return Rejection{}, false
	}
	p := &best.Plan
	d := p.DP()
	n := p.Microbatches()
	if n <= 1 {
		return Rejection{}, false
	}
	// the next D with fewer microbatches per pipeline
	d2 := d + 1
	for ; d2 <= s.req.GlobalBatch/p.MicroBatch; d2++ {
		if (s.req.GlobalBatch+p.MicroBatch*d2-1)/(p.MicroBatch*d2) < n {
			break
		}
	}
	if d2 > s.req.GlobalBatch/p.MicroBatch {
		return Rejection{}, false
	}
	need := map[Endpoint]int{}
	for _, st := range p.Stages {
		r := st.Replicas[0]
		need[r.Endpoint()] += r.TP * d2
	}
	for _, c := range s.classes {
		if need[c.ep] > c.gpus {
			return Rejection{
				Summary: fmt.Sprintf("the chosen layout with D=%d (%d microbatches per pipeline instead of %d)", d2, (s.req.GlobalBatch+p.MicroBatch*d2-1)/(p.MicroBatch*d2), n),
				Reason:  RejectCapacity,
				Detail:  fmt.Sprintf("needs %d× %s in %s, %d usable", need[c.ep], c.ep.GPU, c.ep.Zone, c.gpus),
			}, true
		}
	}
	return Rejection{}, false
}

// spread is 1 for a plan in one zone, 2 for several zones of one region, 3 for several
// regions.
func spread(p *Plan) int {
	zones, regions := map[string]bool{}, map[string]bool{}
	for _, st := range p.Stages {
		for _, r := range st.Replicas {
			zones[r.Zone] = true
			regions[r.Region] = true
		}
	}
	switch {
	case len(regions) > 1:
		return 3
	case len(zones) > 1:
		return 2
	}
	return 1
}

func zonesOf(p *Plan) string {
	var zones []string
	for _, st := range p.Stages {
		for _, r := range st.Replicas {
			zones = appendOnce(zones, r.Zone)
		}
	}
	return strings.Join(zones, ", ")
}

// SummarizePlan is a one-line description of a plan: degrees and micro-batch, then
// SummarizeStages, e.g. "P=2 D=2 mbs=4: L0-12: 2×(A100-40 TP1 us-central1-a) | L13-25: ...".
func SummarizePlan(p *Plan) string {
	return fmt.Sprintf("P=%d D=%d mbs=%d: %s", len(p.Stages), p.DP(), p.MicroBatch, SummarizeStages(p))
}

// SummarizeStages describes each stage's layers and replicas, alike replicas grouped:
// "L0-12: 2×(A100-40 TP1 us-central1-a) | L13-25: 2×(V100-16 TP2 us-central1-b)".
func SummarizeStages(p *Plan) string {
	var b strings.Builder
	for i, st := range p.Stages {
		if i > 0 {
			b.WriteString(" | ")
		}
		fmt.Fprintf(&b, "L%d-%d: %s", st.FirstLayer, st.LastLayer, replicaGroups(st.Replicas))
	}
	return b.String()
}

// replicaGroups summarises replicas as "2×(A100-40 TP1 us-central1-a)", grouping alike ones.
func replicaGroups(rs []Replica) string {
	type group struct {
		r Replica
		n int
	}
	var groups []group
next:
	for _, r := range rs {
		for i := range groups {
			g := &groups[i].r
			if g.GPU == r.GPU && g.TP == r.TP && g.Zone == r.Zone {
				groups[i].n++
				continue next
			}
		}
		groups = append(groups, group{r: r, n: 1})
	}
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = fmt.Sprintf("%d×(%s TP%d %s)", g.n, g.r.GPU, g.r.TP, g.r.Zone)
	}
	return strings.Join(parts, " + ")
}
