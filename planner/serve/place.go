package serve

import "github.com/schooner-ml/schooner/cloud"

// Placement is instances of one offering bought one way, and the replicas they host.
type Placement struct {
	Provider     string             `json:"provider"`
	Region       string             `json:"region"`
	Zone         string             `json:"zone"`
	InstanceType string             `json:"instance_type"`
	Capacity     cloud.CapacityType `json:"capacity"`
	Instances    int                `json:"instances"`
	Replicas     int                `json:"replicas"`
	USDPerHour   float64            `json:"usd_per_hour"`
}

// packing is how replicas of g GPUs go onto machines of per GPUs: a unit is the machines
// bought together in one zone (one machine holding several replicas, or the several machines
// of one replica's pipeline) and holds perUnit replicas.
type packing struct {
	machines, perUnit int
}

func packFor(g, per int) packing {
	if g <= per {
		return packing{machines: 1, perUnit: per / g}
	}
	return packing{machines: (g + per - 1) / per, perUnit: 1}
}

// units is how many units replicas need.
func (p packing) units(replicas int) int { return (replicas + p.perUnit - 1) / p.perUnit }

// place buys units of pk from the cheapest sources that still have the machines, taking
// them out of avail (indexed like sources); false when they run out. A replica's machines
// stay in one zone and capacity type.
func place(sources []source, avail []int, pk packing, units int) ([]Placement, bool) {
	var out []Placement
	for i, s := range sources {
		if units == 0 {
			break
		}
		n := min(units, avail[i]/pk.machines)
		if n == 0 {
			continue
		}
		avail[i] -= n * pk.machines
		units -= n
		o := s.offer
		out = append(out, Placement{Provider: o.Provider, Region: o.Region, Zone: o.Zone, InstanceType: o.InstanceType,
			Capacity: s.capacity, Instances: n * pk.machines, Replicas: n * pk.perUnit,
			USDPerHour: float64(n*pk.machines) * s.price})
	}
	return out, units == 0
}
