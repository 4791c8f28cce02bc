package policy

import (
	"math"
	"sort"
	"time"
)

// Bound is the least any policy could pay to finish a job by its deadline from one start of
// a trace: an omniscient controller that knows the whole trace ahead, whose machines start
// and stop at no cost, is never preempted (it knows when capacity goes and holds nothing
// then) and pays per instance only for the time it trains. Every run the simulator bills
// also pays restarts, boots, idle waits and the pace of the placements it could get, so a
// policy's cost is at least its Bound; a goal below the Bound cannot be met on that start.
type Bound struct {
	Start    time.Duration `json:"start_ns"`
	Deadline time.Duration `json:"deadline_ns"`
	// Feasible is false when not even the fastest placement held in every step of the
	// window (spot where there is some, on-demand for the rest) finishes by the deadline.
	Feasible bool    `json:"feasible"`
	CostUSD  float64 `json:"cost_usd"`
}

// LowerBound is the Bound of job from start with the deadline. It is the optimum of the
// problem's linear relaxation: in each step of the window the controller may hold n
// instances, the cheapest spot instances there are (any zone) and on-demand for the rest,
// at the pace of the fastest placement of n instances in one zone (a placement spread over
// zones is no faster: its links are slower; a test beside this file checks it on the bundled
// traces), or a fraction of a step on them; the cheapest progress (cost per iteration along
// each step's lower convex hull) is bought first until the iterations are covered. The
// job's first restart is the one time that cannot be avoided: training starts Restart after
// the start (unbilled here).
func LowerBound(job Job, m *Market, start, deadline time.Duration) Bound {
	job = job.withDefaults(m)
	b := Bound{Start: start, Deadline: deadline}
	pace := bestPaces(job, m)
	var segs []segment
	reach := 0.0
	for t := time.Duration(0); t < deadline; t += m.Gap {
		from, to := max(t, job.Restart), min(t+m.Gap, deadline)
		if to <= from {
			continue
		}
		hull := stepHull(job, m, pace, m.spotPrices(start+t), (to - from).Hours())
		for _, s := range hull {
			reach += s.progress
		}
		segs = append(segs, hull...)
	}
	need := float64(job.Iterations)
	if reach < need*(1-1e-9) {
		return b
	}
	b.Feasible = true
	sort.SliceStable(segs, func(i, j int) bool { return segs[i].slope() < segs[j].slope() })
	for _, s := range segs {
		if need <= 0 {
			break
		}
		take := min(1, need/s.progress)
		b.CostUSD += take * s.cost
		need -= take * s.progress
	}
	return b
}

// segment is one piece of a step's lower convex hull: progress (iterations) bought for cost.
type segment struct{ progress, cost float64 }

func (s segment) slope() float64 { return s.cost / s.progress }

// bestPaces is, for n instances (index n), the seconds per iteration of the fastest
// placement of at most n instances in one zone (+Inf where nothing fits).
func bestPaces(job Job, m *Market) []float64 {
	most := job.MaxGPUs / m.GPUsPerInst
	out := make([]float64, most+1)
	out[0] = math.Inf(1)
	for n := 1; n <= most; n++ {
		out[n] = out[n-1]
		for _, z := range m.Zones {
			out[n] = min(out[n], job.Throughput.IterSeconds(Placement{z: n * m.GPUsPerInst}))
		}
	}
	return out
}

// spotPrices are the prices of the spot instances the market has at d, cheapest first.
func (m *Market) spotPrices(d time.Duration) []float64 {
	var out []float64
	for _, z := range m.Zones {
		for range m.Capacity(z, d) {
			out = append(out, m.SpotPrice[z])
		}
	}
	sort.Float64s(out)
	return out
}

// stepHull is the lower convex hull, from holding nothing, of what a step of hours can buy:
// for each n, the iterations n instances train and what the cheapest n cost (spot first).
func stepHull(job Job, m *Market, pace []float64, spot []float64, hours float64) []segment {
	type point struct{ progress, cost float64 }
	pts := []point{{0, 0}}
	cost := 0.0
	for n := 1; n < len(pace); n++ {
		if n <= len(spot) {
			cost += spot[n-1]
		} else {
			cost += m.OnDemandPrice
		}
		if math.IsInf(pace[n], 1) {
			continue
		}
		p := point{hours * 3600 / pace[n], cost * hours}
		if p.progress <= pts[len(pts)-1].progress {
			continue // no faster than fewer instances, and dearer
		}
		// drop the last point while it lies on or above the chord to p
		for len(pts) >= 2 {
			a, o := pts[len(pts)-2], pts[len(pts)-1]
			if (o.cost-a.cost)*(p.progress-a.progress) < (p.cost-a.cost)*(o.progress-a.progress) {
				break
			}
			pts = pts[:len(pts)-1]
		}
		pts = append(pts, p)
	}
	segs := make([]segment, 0, len(pts)-1)
	for i := 1; i < len(pts); i++ {
		segs = append(segs, segment{pts[i].progress - pts[i-1].progress, pts[i].cost - pts[i-1].cost})
	}
	return segs
}
