package serve

import "math"

// plan describes a checked candidate.
func (c *checker) plan(cand candidate, lat Latency) Plan {
	p := Plan{Mode: cand.mode, GPU: cand.shape.gpu, GPUsPerInstance: cand.shape.per, GPUs: cand.gpus,
		Instances: cand.instances, USDPerHour: cand.usd, Simulated: lat}
	rate := math.Inf(1) // the most requests/s every pool sustains
	for _, pick := range cand.pools {
		m := &pick.model
		pool := Pool{Role: m.role, Stages: m.l.stages, TP: m.l.tp, Replicas: pick.replicas,
			GPUs: pick.replicas * m.gpus(), MaxBatch: m.maxBatch, PrefillBatch: m.prefillCap,
			Capacity: capacityOf(pick.placements), Placements: pick.placements}
		for _, pl := range pick.placements {
			pool.Instances += pl.Instances
			pool.USDPerHour += pl.USDPerHour
			if pl.Capacity == "spot" {
				p.Spot = true
			}
		}
		p.Pools = append(p.Pools, pool)
		rate = min(rate, float64(pick.replicas)*m.capacity(c.tpot))
	}
	tokens := float64(c.req.OutputTokens)
	p.CapacityTokensPerS = rate * tokens
	p.Utilization = c.req.Rate / rate
	p.USDPerMTokens = p.USDPerHour / (c.req.Rate * tokens * 3600 / 1e6)
	if cand.mode == Disaggregated {
		pr, tk := &cand.pools[0], &cand.pools[1]
		n, t, y, m := dejavuTerms(&pr.model, &tk.model, c.tpot)
		total := float64(pr.replicas*pr.model.gpus() + tk.replicas*tk.model.gpus())
		p.DejaVuTokenGPUs = TokenPoolSize(total, n, t, y, m)
	}
	return p
}
