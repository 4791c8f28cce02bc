package serve

import (
	"cmp"
	"slices"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

// shape is a machine size of one GPU type (8 × H100, 1 × L4, ...): every offering of it, in
// any zone and under any instance type name, is a source of the same machine.
type shape struct {
	gpu     gpu.Type
	per     int
	spec    planner.GPUSpec
	sources []source
}

// source is one offering bought one way: where instances of a shape come from, and how many.
type source struct {
	offer    cloud.Offering
	capacity cloud.CapacityType
	price    float64 // USD per instance-hour
	avail    int     // instances
}

// shapesOf groups the offerings by shape, each shape's sources cheapest first. Spot sources
// come only when spot is allowed, sized by the capacity hint (assume instances where there
// is none); on-demand sources are assumed to have assume instances.
func shapesOf(offers []cloud.Offering, allowSpot bool, assume int) []shape {
	type key struct {
		g   gpu.Type
		per int
	}
	byKey := map[key]*shape{}
	for _, o := range offers {
		spec, ok := planner.Spec(o.GPUType)
		if !ok || o.GPUsPerInstance < 1 {
			continue
		}
		k := key{o.GPUType, o.GPUsPerInstance}
		s := byKey[k]
		if s == nil {
			s = &shape{gpu: o.GPUType, per: o.GPUsPerInstance, spec: spec}
			byKey[k] = s
		}
		if allowSpot && o.SpotPrice > 0 {
			n := o.SpotCapacity
			if n < 0 {
				n = assume
			}
			if n > 0 {
				s.sources = append(s.sources, source{offer: o, capacity: cloud.Spot, price: o.SpotPrice, avail: n})
			}
		}
		if o.OnDemandPrice > 0 {
			s.sources = append(s.sources, source{offer: o, capacity: cloud.OnDemand, price: o.OnDemandPrice, avail: assume})
		}
	}
	var out []shape
	for _, s := range byKey {
		if len(s.sources) == 0 {
			continue
		}
		slices.SortStableFunc(s.sources, func(a, b source) int {
			return cmp.Or(cmp.Compare(a.price, b.price), cmp.Compare(a.offer.Zone, b.offer.Zone),
				cmp.Compare(a.offer.InstanceType, b.offer.InstanceType), cmp.Compare(a.capacity, b.capacity))
		})
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b shape) int {
		return cmp.Or(cmp.Compare(a.gpu, b.gpu), cmp.Compare(a.per, b.per))
	})
	return out
}
