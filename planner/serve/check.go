package serve

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Simulation budget: the queueing model ranks every layout; the simulation checks the
// cheapest until Top of them pass, at most maxSims runs in all, adding replicas to a pool
// that missed its target at most maxBumps times per candidate.
const (
	maxSims    = 32
	maxBumps   = 3
	maxSimReqs = 12000
	// lifetimes is how many request lifetimes (at the targets) the simulated arrivals span,
	// where maxSimReqs allows.
	lifetimes = 3
)

// checker simulates candidates, cheapest first.
type checker struct {
	req        Request
	ttft, tpot float64
	sims       int
	seen       map[string]bool
	// failed is, per pool layout, the most replicas a simulation saw miss that pool's
	// target: a later candidate with that pool starts above it.
	failed map[string]int
	// best are the lowest p99s any simulation gave, for the error when none passes.
	bestTTFT, bestTPOT float64
}

func (c *checker) check(cands []candidate) []Plan {
	var plans []Plan
	for _, cand := range cands {
		if c.sims >= maxSims {
			break
		}
		if len(plans) >= c.req.Top && cand.usd > plans[c.req.Top-1].USDPerHour {
			break
		}
		for bump := 0; bump <= maxBumps && c.sims < maxSims; bump++ {
			var ok bool
			if cand, ok = c.lift(cand); !ok {
				break
			}
			k := cand.key()
			if c.seen[k] {
				break
			}
			c.seen[k] = true
			lat := c.simulate(cand)
			ttftOK, tpotOK := lat.TTFTP99 <= c.ttft, c.req.OutputTokens <= 1 || lat.TPOTP99 <= c.tpot
			if ttftOK && tpotOK {
				plans = append(plans, c.plan(cand, lat))
				slices.SortStableFunc(plans, c.comparePlans)
				break
			}
			c.remember(cand, !ttftOK, !tpotOK)
			if cand, ok = cand.bumped(!ttftOK, !tpotOK, c.req.MaxGPUs); !ok {
				break
			}
		}
	}
	return plans
}

// comparePlans ranks by USD per hour, then by the p99 closest to its target.
func (c *checker) comparePlans(a, b Plan) int {
	margin := func(p Plan) float64 { return max(p.Simulated.TTFTP99/c.ttft, p.Simulated.TPOTP99/c.tpot) }
	return cmp.Or(cmp.Compare(a.USDPerHour, b.USDPerHour), cmp.Compare(margin(a), margin(b)))
}

func (c *checker) simulate(cand candidate) Latency {
	in := simInput{rate: c.req.Rate, output: c.req.OutputTokens, requests: c.simRequests(), warmup: c.lifetime(), seed: c.req.Seed}
	for _, p := range cand.pools {
		in.pools = append(in.pools, simPoolOf(&p.model, p.replicas))
	}
	c.sims++
	lat := simulate(in)
	c.bestTTFT = minPos(c.bestTTFT, lat.TTFTP99)
	c.bestTPOT = minPos(c.bestTPOT, lat.TPOTP99)
	return lat
}

// simRequests is enough requests that the arrivals span a few lifetimes of a request at
// the targets, at least DefaultSimRequests and at most maxSimReqs.
func (c *checker) simRequests() int {
	if c.req.SimRequests > 0 {
		return c.req.SimRequests
	}
	n := int(math.Ceil(lifetimes * c.req.Rate * c.lifetime()))
	return min(max(n, DefaultSimRequests), maxSimReqs)
}

// lifetime is how long a request takes at the targets: the warm-up the simulation leaves
// out of its percentiles.
func (c *checker) lifetime() float64 {
	return c.ttft + float64(c.req.OutputTokens-1)*c.tpot
}

func (c *checker) explain() error {
	switch {
	case c.bestTTFT > c.ttft:
		return &UnreachableError{Target: TargetTTFT, Want: c.ttft, Best: c.bestTTFT, Simulated: true, MaxGPUs: c.req.MaxGPUs}
	case c.bestTPOT > c.tpot:
		return &UnreachableError{Target: TargetTPOT, Want: c.tpot, Best: c.bestTPOT, Simulated: true, MaxGPUs: c.req.MaxGPUs}
	default:
		return &UnreachableError{Target: TargetBoth, Want: c.ttft, Best: c.bestTTFT, WantTPOT: c.tpot, BestTPOT: c.bestTPOT,
			Simulated: true, MaxGPUs: c.req.MaxGPUs}
	}
}

// key identifies a candidate's configuration, so a bumped one met again is not re-run.
func (cand candidate) key() string {
	k := fmt.Sprintf("%s/%d/%s", cand.shape.gpu, cand.shape.per, cand.mode)
	for _, p := range cand.pools {
		k += fmt.Sprintf("/%s:%dx%dx%d", p.model.role, p.model.l.tp, p.model.l.stages, p.replicas)
	}
	return k
}

// misses says which pools of cand a miss of TTFT or TPOT is laid at: the colocated pool for
// either, else the prompt pool for TTFT and the token pool for TPOT.
func (cand candidate) misses(i int, ttft, tpot bool) bool {
	role := cand.pools[i].model.role
	return role == RoleBoth && (ttft || tpot) || role == RolePrompt && ttft || role == RoleToken && tpot
}

// poolKey names a pool's layout on cand's shape.
func (cand candidate) poolKey(i int) string {
	m := &cand.pools[i].model
	return fmt.Sprintf("%s/%d/%s/%dx%d", cand.shape.gpu, cand.shape.per, m.role, m.l.tp, m.l.stages)
}

// remember records the pools that missed.
func (c *checker) remember(cand candidate, ttft, tpot bool) {
	for i := range cand.pools {
		if cand.misses(i, ttft, tpot) {
			k := cand.poolKey(i)
			c.failed[k] = max(c.failed[k], cand.pools[i].replicas)
		}
	}
}

// lift raises each pool of cand above the replicas known to miss; false when that does not
// fit the cap or the offerings.
func (c *checker) lift(cand candidate) (candidate, bool) {
	units := make([]int, len(cand.pools))
	changed := false
	for i, p := range cand.pools {
		units[i] = p.pk.units(p.replicas)
		if f, ok := c.failed[cand.poolKey(i)]; ok && p.replicas <= f {
			units[i] = p.pk.units(f) + 1
			changed = true
		}
	}
	if !changed {
		return cand, true
	}
	return cand.withUnits(units, c.req.MaxGPUs)
}

// bumped is cand with another unit of machines for each pool that missed its target.
func (cand candidate) bumped(ttft, tpot bool, maxGPUs int) (candidate, bool) {
	units := make([]int, len(cand.pools))
	for i, p := range cand.pools {
		units[i] = p.pk.units(p.replicas)
		if cand.misses(i, ttft, tpot) {
			units[i]++
		}
	}
	return cand.withUnits(units, maxGPUs)
}

// withUnits is cand with units[i] units of machines for pool i, bought afresh.
func (cand candidate) withUnits(units []int, maxGPUs int) (candidate, bool) {
	pools := slices.Clone(cand.pools)
	avail := availOf(cand.shape)
	for i := range pools {
		pools[i].replicas = units[i] * pools[i].pk.perUnit
		var ok bool
		if pools[i].placements, ok = place(cand.shape.sources, avail, pools[i].pk, units[i]); !ok {
			return candidate{}, false
		}
	}
	next := newCandidate(cand.shape, cand.mode, pools)
	return next, next.gpus <= maxGPUs
}
