package policy

import "github.com/schooner-ml/schooner/cloud/catalog"

// SkyPilotFailover is SkyPilot's FAILOVER recovery for a managed spot job: the job's cluster
// (max_gpus, all in one zone) is relaunched after a preemption in the zone it ran in first,
// then in the others in order; it waits for capacity and never buys on-demand.
func SkyPilotFailover() Maker {
	return Maker{Name: "skypilot-failover", About: "SkyPilot FAILOVER: one-zone cluster, relaunch in the same zone first",
		New: func() Policy { return &skyPilot{eager: false} }}
}

// SkyPilotEagerNextRegion is SkyPilot's EAGER_NEXT_REGION (its default): after a
// preemption the cluster is relaunched in the other regions first, the one that preempted
// last; like FAILOVER it never buys on-demand.
func SkyPilotEagerNextRegion() Maker {
	return Maker{Name: "skypilot-eager-next-region", About: "SkyPilot EAGER_NEXT_REGION: relaunch in another region first",
		New: func() Policy { return &skyPilot{eager: true} }}
}

type skyPilot struct {
	eager bool
	// zone is where the cluster runs or last ran.
	zone string
}

func (s *skyPilot) Decide(v *View) Request {
	for z, g := range v.Spot {
		if g == v.Job.MaxGPUs {
			s.zone = z
			return Request{Spot: g, Zones: []string{z}, Gang: true}
		}
	}
	order := s.order(v.Market.Zones)
	for _, z := range order {
		if v.Capacity[z] >= v.Job.MaxGPUs {
			s.zone = z
			break
		}
	}
	return Request{Spot: v.Job.MaxGPUs, Zones: order, Gang: true}
}

// order is the relaunch order: FAILOVER retries the zone it ran in, then the rest in
// order; EAGER_NEXT_REGION tries the other regions' zones first.
func (s *skyPilot) order(zones []string) []string {
	if s.zone == "" {
		return zones
	}
	if !s.eager {
		out := []string{s.zone}
		for _, z := range zones {
			if z != s.zone {
				out = append(out, z)
			}
		}
		return out
	}
	region := catalog.RegionOf("aws", s.zone)
	var other, same []string
	for _, z := range zones {
		if catalog.RegionOf("aws", z) == region {
			same = append(same, z)
		} else {
			other = append(other, z)
		}
	}
	// The regions after the one that preempted come first, wrapping round, as SkyPilot
	// walks its region list.
	i := 0
	for i < len(other) && other[i] < s.zone {
		i++
	}
	return append(append(other[i:], other[:i]...), same...)
}
