package policy

import (
	"math"
	"time"
)

// OnDemandPlan is the job run on on-demand GPUs alone, in one zone, with nothing lost: the
// baseline every policy's cost is compared with.
type OnDemandPlan struct {
	GPUs     int           `json:"gpus"`
	Duration time.Duration `json:"duration_ns"`
	CostUSD  float64       `json:"cost_usd"`
	// Met is false when even the fastest on-demand plan misses the deadline.
	Met bool `json:"met_deadline"`
}

// BestOnDemand is the cheapest on-demand plan that meets the deadline (the fastest when none
// does): what a user who never touches spot would buy. A plan larger than it needs is dearer
// per iteration (data parallelism is never perfectly efficient), so the cheapest is usually
// the smallest that keeps the deadline.
func BestOnDemand(job Job, m *Market, deadline time.Duration) OnDemandPlan {
	job = job.withDefaults(m)
	var best, fastest OnDemandPlan
	haveBest := false
	zone := m.Zones[0]
	for g := m.GPUsPerInst; g <= job.MaxGPUs; g += m.GPUsPerInst {
		if math.IsInf(job.Throughput.IterSeconds(Placement{zone: g}), 1) {
			continue
		}
		d := job.duration(Placement{zone: g})
		p := OnDemandPlan{GPUs: g, Duration: d, CostUSD: float64(g/m.GPUsPerInst) * m.OnDemandPrice * (d - job.Boot).Hours(),
			Met: deadline <= 0 || d <= deadline}
		if fastest.GPUs == 0 || d < fastest.Duration {
			fastest = p
		}
		if p.Met && (!haveBest || p.CostUSD < best.CostUSD) {
			best, haveBest = p, true
		}
	}
	if haveBest {
		return best
	}
	return fastest
}

// SpotOnlyDuration is how long the job takes on its largest plan in one zone with nothing
// lost: the unit the benchmark's deadlines are given in (1.2×, 1.5×, 2×).
func SpotOnlyDuration(job Job, m *Market) time.Duration {
	job = job.withDefaults(m)
	return job.duration(Placement{m.Zones[0]: job.MaxGPUs})
}
