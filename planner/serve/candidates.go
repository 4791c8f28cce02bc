package serve

import (
	"cmp"
	"math"
	"slices"
)

// poolPick is a pool of a candidate: one replica's model, how many, and where they go.
type poolPick struct {
	model      poolModel
	replicas   int
	pk         packing
	placements []Placement
}

// candidate is a configuration the queueing model says meets the targets.
type candidate struct {
	shape *shape
	mode  Mode
	pools []poolPick
	usd   float64
	// instances and gpus are bought in all.
	instances, gpus int
}

// floors is what the enumeration learned for the error when nothing meets the targets.
type floors struct {
	fits       bool    // some layout holds the model and a request
	ttft, tpot float64 // the best of any layout alone (a request on an idle replica)
	rate       float64 // the most requests/s any layout sustains within the cap
	short      bool    // some layout met the targets but the offerings lacked the machines
	largestGPU float64
}

// enumerator scores every layout of every shape with the queueing model.
type enumerator struct {
	req        Request
	ttft, tpot float64
	considered int
	floors     floors
}

// disaggTop is how many of the cheapest prompt and token pools of a shape are paired.
const disaggTop = 3

func (e *enumerator) shape(s *shape) []candidate {
	req := &e.req
	a := req.Model
	e.floors.largestGPU = max(e.floors.largestGPU, s.spec.MemoryBytes)
	var out []candidate
	var prompts, tokens []poolPick
	for tp := 1; tp <= s.per; tp *= 2 {
		for d := 1; d <= a.Layers && d*tp <= req.MaxGPUs; d++ {
			l, ok := newLayout(a, s.spec, tp, d, s.per, req.Network, req.Assumptions)
			if !ok {
				break
			}
			e.considered++
			if l.kvRoom(0) <= 0 {
				continue // the weights alone do not fit: a deeper pipeline may
			}
			if p, ok := e.pool(s, l, RoleBoth); ok {
				out = append(out, e.single(s, p))
			}
			if req.OutputTokens > 1 {
				if p, ok := e.pool(s, l, RolePrompt); ok {
					prompts = append(prompts, p)
				}
				if p, ok := newPool(l, RoleToken, req.PromptTokens, req.OutputTokens); ok {
					tokens = append(tokens, poolPick{model: p})
				}
			}
		}
	}
	return append(out, e.pairs(s, cheapest(prompts, disaggTop), tokens)...)
}

// pool sizes a colocated or prompt pool of l: the fewest replicas that meet the targets,
// then every replica its machines hold; false when none do or they cannot be bought.
func (e *enumerator) pool(s *shape, l layout, role Role) (poolPick, bool) {
	req := &e.req
	p, ok := newPool(l, role, req.PromptTokens, req.OutputTokens)
	if !ok {
		return poolPick{}, false
	}
	e.floors.fits = true
	e.floors.ttft = minPos(e.floors.ttft, p.prefill(1))
	if role == RoleBoth {
		e.floors.tpot = minPos(e.floors.tpot, p.decode(1))
		e.floors.rate = max(e.floors.rate, p.capacity(e.tpot)*float64(req.MaxGPUs/l.gpus()))
	}
	limit := req.MaxGPUs / l.gpus()
	r := p.minReplicas(p.lowerBound(req.Rate), limit, req.Rate, e.ttft, e.tpot)
	if r == 0 {
		return poolPick{}, false
	}
	return e.fill(s, p, r)
}

// fill packs r replicas of p into whole machines, raises the count to what the machines
// hold, and prices them standalone; false when over the cap or short of machines.
func (e *enumerator) fill(s *shape, p poolModel, r int) (poolPick, bool) {
	pk := packFor(p.gpus(), s.per)
	units := pk.units(r)
	if units*pk.machines*s.per > e.req.MaxGPUs {
		return poolPick{}, false
	}
	pick := poolPick{model: p, replicas: units * pk.perUnit, pk: pk}
	avail := availOf(s)
	var ok bool
	if pick.placements, ok = place(s.sources, avail, pk, units); !ok {
		e.floors.short = true
		return poolPick{}, false
	}
	return pick, true
}

// single is a colocated candidate.
func (e *enumerator) single(s *shape, p poolPick) candidate {
	return newCandidate(s, Colocated, []poolPick{p})
}

// pairs matches each of the cheapest prompt pools with token pools sized from DéjàVu's
// D_t, keeps the cheapest few per prompt pool, and buys each pair from one set of machines.
func (e *enumerator) pairs(s *shape, prompts, tokenLayouts []poolPick) []candidate {
	req := &e.req
	var out []candidate
	for _, pp := range prompts {
		var tokens []poolPick
		for _, tl := range tokenLayouts {
			t := tl.model
			t.transfer = pp.model.transfer
			e.floors.tpot = minPos(e.floors.tpot, t.decode(1))
			start := tokenShareStart(&pp.model, &t, pp.replicas, e.tpot)
			limit := (req.MaxGPUs - pp.pk.units(pp.replicas)*pp.pk.machines*s.per) / t.gpus()
			r := t.minReplicas(start, limit, req.Rate, e.ttft, e.tpot)
			if r == 0 {
				continue
			}
			if pick, ok := e.fill(s, t, r); ok {
				tokens = append(tokens, pick)
			}
		}
		for _, tp := range cheapest(tokens, disaggTop) {
			if c, ok := e.pair(s, pp, tp); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// pair buys the prompt pool first (it holds no state worth keeping, so it gets the spot
// capacity first), then the token pool from what is left.
func (e *enumerator) pair(s *shape, prompt, token poolPick) (candidate, bool) {
	avail := availOf(s)
	var ok bool
	if prompt.placements, ok = place(s.sources, avail, prompt.pk, prompt.pk.units(prompt.replicas)); !ok {
		return candidate{}, false
	}
	if token.placements, ok = place(s.sources, avail, token.pk, token.pk.units(token.replicas)); !ok {
		e.floors.short = true
		return candidate{}, false
	}
	c := newCandidate(s, Disaggregated, []poolPick{prompt, token})
	return c, c.gpus <= e.req.MaxGPUs
}

func newCandidate(s *shape, mode Mode, pools []poolPick) candidate {
	c := candidate{shape: s, mode: mode, pools: pools}
	for _, p := range pools {
		for _, pl := range p.placements {
			c.usd += pl.USDPerHour
			c.instances += pl.Instances
		}
	}
	c.gpus = c.instances * s.per
	return c
}

// cheapest is the n cheapest picks standalone, fewer GPUs first among equals.
func cheapest(picks []poolPick, n int) []poolPick {
	cost := func(p poolPick) float64 {
		var usd float64
		for _, pl := range p.placements {
			usd += pl.USDPerHour
		}
		return usd
	}
	out := append([]poolPick(nil), picks...)
	slices.SortStableFunc(out, func(a, b poolPick) int {
		return cmp.Or(cmp.Compare(cost(a), cost(b)), cmp.Compare(a.replicas*a.model.gpus(), b.replicas*b.model.gpus()))
	})
	return out[:min(n, len(out))]
}

func availOf(s *shape) []int {
	avail := make([]int, len(s.sources))
	for i, src := range s.sources {
		avail[i] = src.avail
	}
	return avail
}

// minPos is the smaller of a and b where a 0 means unset.
func minPos(a, b float64) float64 {
	if a <= 0 || math.IsNaN(a) {
		return b
	}
	return min(a, b)
}
