package policy

import "sort"

// AllOnDemand holds the best on-demand plan from start to end: the baseline, run through the
// simulator (its ratio is 1 unless the plan misses the deadline).
func AllOnDemand() Maker {
	return Maker{Name: "all-on-demand", About: "the best on-demand plan for the deadline, never spot",
		New: func() Policy { return onDemandOnly{} }}
}

type onDemandOnly struct{}

func (onDemandOnly) Decide(v *View) Request {
	return Request{OnDemand: v.Baseline.GPUs, Zones: v.Market.Zones, Why: "all on-demand"}
}

// AllSpot asks for the job's largest plan on spot, in any zone, and never buys on-demand:
// what a job gets when nobody watches the deadline.
func AllSpot() Maker {
	return Maker{Name: "all-spot", About: "max_gpus on spot across zones, never on-demand",
		New: func() Policy { return spotOnly{} }}
}

type spotOnly struct{}

func (spotOnly) Decide(v *View) Request {
	return Request{Spot: v.Job.MaxGPUs, Zones: byCapacity(v)}
}

// byCapacity orders the market's zones by spot price, then by the capacity they have now
// (most first), so that a request spreads over as few zones as it can.
func byCapacity(v *View) []string {
	zones := append([]string(nil), v.Market.Zones...)
	sort.SliceStable(zones, func(i, j int) bool {
		a, b := zones[i], zones[j]
		if pa, pb := v.Market.SpotPrice[a], v.Market.SpotPrice[b]; pa != pb {
			return pa < pb
		}
		return v.Capacity[a] > v.Capacity[b]
	})
	return zones
}
