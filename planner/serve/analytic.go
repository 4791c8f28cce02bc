package serve

import "math"

// The closed-form queueing model that prunes the search before the simulation checks the
// survivors. It approximates p99s from means (heavy-traffic and Poisson tails below) and
// can be wrong either way; where it is optimistic the simulation rejects the configuration
// or adds replicas (search.go), and where it is pessimistic a cheaper configuration goes
// unseen, which is why it leans optimistic: prompts are taken in the batches the load
// forms, and the tails are those of deterministic service.

// estimate is one replica's predicted p99 TTFT and TPOT, in seconds; ok is false when the
// replica cannot keep up at all (a queue that grows without bound, or more sequences than
// fit).
type estimate struct {
	ttft, tpot float64
	ok         bool
}

// waitP99 is the p99 wait for a server in a pool of c that the router keeps evenly loaded,
// at arrival rate (of the pool) and deterministic service s: M/D/c, taken as half the
// M/M/c wait (the deterministic service's halving of the M/G/1 wait carried over), whose
// tail is Erlang C's probability of waiting times an exponential of rate c/s − rate.
func waitP99(rate, s float64, c int) float64 {
	a := rate * s // offered load, Erlangs
	cf := float64(c)
	if a >= cf {
		return math.Inf(1)
	}
	b := 1.0 // Erlang B by the recurrence B(k) = a·B(k−1) / (k + a·B(k−1))
	for k := 1; k <= c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	rho := a / cf
	wait := b / (1 - rho*(1-b)) // Erlang C
	if wait <= 0.01 {
		return 0
	}
	return math.Log(100*wait) / (cf/s - rate) / 2
}

// poissonP99 is the smallest k with P(X ≤ k) ≥ 0.99 for X Poisson of the given mean.
func poissonP99(mean float64) int {
	if mean <= 0 {
		return 0
	}
	logP := -mean // log P(X = 0)
	cdf := math.Exp(logP)
	k := 0
	for cdf < 0.99 && k < int(mean+20*math.Sqrt(mean)+20) {
		k++
		logP += math.Log(mean / float64(k))
		cdf += math.Exp(logP)
	}
	return k
}

// sequencesInFlight solves n = rate·steps·iter(n) for the sequences a replica decodes at
// once (Little's law), by iterating from below to the least fixed point; false when it
// passes limit.
func sequencesInFlight(rate, steps float64, limit int, iter func(int) float64) (int, bool) {
	n := 1
	for range 100 {
		next := max(1, int(math.Ceil(rate*steps*iter(n))))
		if next > limit {
			return 0, false
		}
		if next <= n {
			return n, true
		}
		n = next
	}
	return 0, false
}

// prefillLoad is the prefill batch a replica forms at rate (the prompts that arrive during
// one prefill, at least one, at most the cap), its duration, and the utilisation prefills
// take.
func (p *poolModel) prefillLoad(rate float64) (k int, y, rho float64) {
	k = min(max(1, int(math.Ceil(rate*p.prefill(1)))), p.prefillCap)
	y = p.prefill(k)
	return k, y, rate * y / float64(k)
}

// at predicts replicas replicas of p serving rate requests/s in all.
func (p *poolModel) at(rate float64, replicas int) estimate {
	steps := float64(p.output - 1)
	per := rate / float64(replicas)
	switch p.role {
	case RolePrompt:
		k, y, rho := p.prefillLoad(per)
		if rho >= 1 {
			return estimate{}
		}
		return estimate{ttft: y + waitP99(rate/float64(k), y, replicas), ok: true}
	case RoleToken:
		n, ok := sequencesInFlight(per, steps, p.maxBatch, p.decode)
		if !ok {
			return estimate{}
		}
		it := p.decode(n)
		// the second token waits for the KV and for the next iteration boundary
		return estimate{tpot: it + (p.transfer+it)/math.Max(steps, 1), ok: true}
	default:
		k, y, rho := p.prefillLoad(per)
		if rho >= 1 {
			return estimate{}
		}
		stall := 1 / (1 - rho) // prefills hold the decodes
		n, ok := sequencesInFlight(per, steps, p.maxBatch, func(n int) float64 { return p.decode(n) * stall })
		if !ok {
			return estimate{}
		}
		it := p.decode(n)
		// A request's mean TPOT is one iteration plus the prefills that land while it decodes,
		// spread over its tokens: their count is Poisson.
		stalls := poissonP99(per / float64(k) * steps * it * stall)
		return estimate{ttft: y + it + waitP99(rate/float64(k), y, replicas), tpot: it + float64(stalls)*y/math.Max(steps, 1), ok: true}
	}
}

// meets reports whether replicas replicas of p meet the targets (seconds) at rate.
func (p *poolModel) meets(replicas int, rate, ttft, tpot float64) bool {
	m := p.at(rate, replicas)
	if !m.ok {
		return false
	}
	if p.role != RoleToken && m.ttft > ttft {
		return false
	}
	return p.role == RolePrompt || p.output <= 1 || m.tpot <= tpot
}

// minReplicas is the fewest replicas, at most limit, that meet the targets, searched from
// start: down while fewer still meet them, else up. 0 when none up to limit does.
func (p *poolModel) minReplicas(start, limit int, rate, ttft, tpot float64) int {
	r := min(max(start, 1), limit)
	if p.meets(r, rate, ttft, tpot) {
		for r > 1 && p.meets(r-1, rate, ttft, tpot) {
			r--
		}
		return r
	}
	for r++; r <= limit; r++ {
		if p.meets(r, rate, ttft, tpot) {
			return r
		}
	}
	return 0
}

// lowerBound is the fewest replicas whose work-conserving capacity covers the load: where
// the replica search starts when nothing better is known.
func (p *poolModel) lowerBound(rate float64) int {
	var work float64 // seconds of a replica per request
	switch p.role {
	case RolePrompt:
		work = p.prefillPerRequest()
	case RoleToken:
		work = float64(p.output-1) * p.decode(p.maxBatch) / float64(p.maxBatch)
	default:
		work = p.prefillPerRequest() + float64(p.output-1)*p.decode(p.maxBatch)/float64(p.maxBatch)
	}
	return max(1, int(math.Ceil(rate*work)))
}

// capacity is the most requests/s one replica sustains with decode iterations no longer
// than tpot: the largest batch that keeps to it, prompts at the full batch's cost.
func (p *poolModel) capacity(tpot float64) float64 {
	switch p.role {
	case RolePrompt:
		return 1 / p.prefillPerRequest()
	case RoleToken:
		if p.output <= 1 {
			return math.Inf(1)
		}
		b := p.batchAt(tpot)
		return float64(b) / (float64(p.output-1) * p.decode(b))
	default:
		if p.output <= 1 {
			return 1 / p.prefillPerRequest()
		}
		b := p.batchAt(tpot)
		return 1 / (p.prefillPerRequest() + float64(p.output-1)*p.decode(b)/float64(b))
	}
}
