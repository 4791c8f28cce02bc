// Package bridge turns what a cloud offers into what the planner plans on, for every caller:
// the TrainingJob's PlanJob activity and `schooner plan search` alike. It maps offerings and
// held instances to planner pools, caps them, tells a planned replica's capacity type, and
// loads model profiles. The planner itself stays free of clouds and files.
package bridge

import (
	"fmt"
	"maps"
	"sort"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/planner"
)

// DefaultAssumeInstances is the number of instances assumed obtainable of an offering whose
// provider gives no capacity hint (and of every on-demand offering).
const DefaultAssumeInstances = 4

// Pricing says which of an offering's two prices become pools.
type Pricing struct {
	// Spot offers spot capacity, sized by the offering's capacity hint.
	Spot bool
	// OnDemand offers on-demand capacity, AssumeInstances instances of it.
	OnDemand bool
	// AssumeInstances sizes offerings without a hint (0: DefaultAssumeInstances).
	AssumeInstances int
}

// OfferPools turns offerings into pools: one spot pool per offering (when Spot, and the
// hint or the assumption leaves any capacity) and one on-demand pool (when OnDemand). A pool
// keeps its capacity type, so the plan built on it says what to buy.
func OfferPools(offers []cloud.Offering, p Pricing) []planner.Pool {
	assume := p.AssumeInstances
	if assume <= 0 {
		assume = DefaultAssumeInstances
	}
	var out []planner.Pool
	for _, o := range offers {
		per := max(o.GPUsPerInstance, 1)
		base := planner.Pool{Provider: o.Provider, Region: o.Region, Zone: o.Zone, InstanceType: o.InstanceType,
			GPU: o.GPUType, GPUsPerNode: per}
		if p.Spot {
			n := assume
			if o.SpotCapacity >= 0 {
				n = o.SpotCapacity
			}
			if n > 0 && o.SpotPrice > 0 {
				sp := base
				sp.GPUs, sp.USDPerGPUHour, sp.Spot = n*per, o.SpotPrice/float64(per), true
				out = append(out, sp)
			}
		}
		if p.OnDemand && o.OnDemandPrice > 0 {
			od := base
			od.GPUs, od.USDPerGPUHour = assume*per, o.OnDemandPrice/float64(per)
			out = append(out, od)
		}
	}
	return out
}

// HeldPools groups instances a job already holds into pools priced as they were bought.
func HeldPools(insts []cloud.Instance) []planner.Pool {
	idx := map[string]int{}
	var out []planner.Pool
	for _, in := range insts {
		per := max(in.GPUs, 1)
		p := planner.Pool{Provider: in.Provider, Region: in.Region, Zone: in.Zone, InstanceType: in.InstanceType,
			GPU: in.GPUType, GPUsPerNode: per, USDPerGPUHour: in.PricePerHour / float64(per), Spot: in.Capacity != cloud.OnDemand}
		k := fmt.Sprintf("%s/%s/%s/%t/%g", p.Provider, p.Zone, p.InstanceType, p.Spot, p.USDPerGPUHour)
		if i, ok := idx[k]; ok {
			out[i].GPUs += per
			continue
		}
		p.GPUs = per
		idx[k] = len(out)
		out = append(out, p)
	}
	return out
}

// CapGPUs keeps at most maxGPUs GPUs in all (0: no cap), held pools first, then the cheapest
// offers, in whole instances.
func CapGPUs(held, offers []planner.Pool, maxGPUs int) ([]planner.Pool, []planner.Pool) {
	if maxGPUs <= 0 {
		return held, offers
	}
	left := maxGPUs
	take := func(ps []planner.Pool) []planner.Pool {
		var out []planner.Pool
		for _, p := range ps {
			per := max(p.GPUsPerNode, 1)
			n := min(p.GPUs, left/per*per)
			if n <= 0 {
				continue
			}
			p.GPUs = n
			left -= n
			out = append(out, p)
		}
		return out
	}
	sorted := append([]planner.Pool(nil), offers...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].USDPerGPUHour < sorted[j].USDPerGPUHour })
	h := take(held)
	return h, take(sorted)
}

// CapByZone keeps, of each capacity type whose caps are set (non-nil), at most the cap's GPUs
// per zone (a zone the cap leaves out: none), held pools first, then the offers in order, in
// whole instances; pools left empty are dropped. It is how a plan keeps to what the deadline
// policy asked to hold.
func CapByZone(held, offers []planner.Pool, spot, onDemand map[string]int) ([]planner.Pool, []planner.Pool) {
	if spot == nil && onDemand == nil {
		return held, offers
	}
	left := map[bool]map[string]int{true: maps.Clone(spot), false: maps.Clone(onDemand)}
	take := func(ps []planner.Pool) []planner.Pool {
		var out []planner.Pool
		for _, p := range ps {
			caps := left[p.Spot]
			if caps != nil {
				per := max(p.GPUsPerNode, 1)
				p.GPUs = min(p.GPUs, caps[p.Zone]/per*per)
				caps[p.Zone] -= p.GPUs
			}
			if p.GPUs > 0 {
				out = append(out, p)
			}
		}
		return out
	}
	h := take(held)
	return h, take(offers)
}

// CapPerPool keeps at most maxGPUs GPUs of any one pool (0: no cap), in whole instances, and
// drops pools left empty.
func CapPerPool(pools []planner.Pool, maxGPUs int) []planner.Pool {
	out := make([]planner.Pool, 0, len(pools))
	for _, p := range pools {
		if maxGPUs > 0 && p.GPUs > maxGPUs {
			per := max(p.GPUsPerNode, 1)
			p.GPUs = maxGPUs / per * per
		}
		if p.GPUs > 0 {
			out = append(out, p)
		}
	}
	return out
}

// Capacity is the capacity type to buy for a planned replica: the one of the pool it was
// planned on.
func Capacity(r planner.Replica) cloud.CapacityType {
	if r.Spot {
		return cloud.Spot
	}
	return cloud.OnDemand
}
