package serving

import (
	"slices"
	"strings"
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/internal/defaults"
)

// Slot is one (replica, stage) of a deployment: one inference worker on one machine.
type Slot struct {
	// Pool is PoolPrefill for a prefill replica's stage, else empty; the pools number their
	// replicas apart.
	Pool    string `json:"pool,omitempty"`
	Replica int    `json:"replica"`
	Stage   int    `json:"stage"`
}

// ZoneUse says a stage of a replica runs (or will run) in a zone: placement spreads a
// replica's stages over zones.
type ZoneUse struct {
	Slot
	Zone string `json:"zone"`
}

// PlacementRequest asks where to run the slots in Need.
type PlacementRequest struct {
	Offers []cloud.Offering
	Spot   fleet.SpotPolicy
	// GPUTypes allowed (empty: any offered).
	GPUTypes []string
	Need     []Slot
	// SpotOnly are slots of Need that may take spot capacity only, whatever Spot says (a
	// stage moving off its on-demand fallback machine back to spot): with no spot room they
	// are unplaced.
	SpotOnly []Slot
	// Held are the zones of the stages that keep their machines.
	Held []ZoneUse
	// Unavailable are offerings short of capacity; Avoided zones that preempted (whole-zone
	// keys), left out for spot only: on-demand machines are not reclaimed.
	Unavailable cloud.ExpirySet
	Avoided     cloud.ExpirySet
	Now         time.Time
	// AssumeSpotCapacity is the spot instances an offering without a hint (-1) is assumed
	// to have; 0 means 4.
	AssumeSpotCapacity int
	// DecodeReplicas and Depth (the deployment's decode replicas and pipeline stages), when
	// both > 0, place each prefill stage in the zone of the machine whose holder it streams
	// its prompts' KV caches to (PrefillHolder), where that zone offers room: a prompt's cache
	// is large (256 MiB for 2,048 tokens of an 8B model), and crossing zones adds its transfer
	// to the time to first token and is billed per gigabyte by the clouds. Zero places
	// prefill stages as any other.
	DecodeReplicas, Depth int
}

// StagePlacement is the offering one slot runs on.
type StagePlacement struct {
	Slot
	Key           cloud.OfferingKey `json:"key"`
	Provider      string            `json:"provider"`
	GPUType       gpu.Type          `json:"gpu_type"`
	GPUs          int               `json:"gpus"`
	PricePerHour  float64           `json:"price_per_hour"`
	OnDemandPrice float64           `json:"on_demand_price"`
}

// Placement is the answer: a placement per slot that could be placed, and the slots that
// could not (nothing usable is offered now; the workflow tries again later).
type Placement struct {
	Stages   []StagePlacement `json:"stages"`
	Unplaced []Slot           `json:"unplaced,omitempty"`
}

// Place chooses an offering per slot, slots in (pool, replica, stage) order (decode replicas
// before prefill ones):
//
//   - spot before on-demand: the spot policy allows on-demand capacity always (on-demand)
//     or only for a slot no spot offering can take (spot-with-fallback), never for spot;
//   - then, for a prefill stage with DecodeReplicas and Depth, the zone of the decode stage
//     whose node holds what it streams (placed or held), so its prompts' caches stay in the
//     zone;
//   - then spread: the zone holding the fewest of the replica's other stages, so one zone's
//     preemption wave does not take a whole pipeline;
//   - then the cheapest, then the zone holding fewest stages overall, then offer order.
//
// Spot capacity hints are consumed as slots take them. Deterministic: no map is iterated.
func Place(req PlacementRequest) Placement {
	need := slices.Clone(req.Need)
	slices.SortStableFunc(need, func(a, b Slot) int {
		if a.Pool != b.Pool {
			return strings.Compare(a.Pool, b.Pool)
		}
		if a.Replica != b.Replica {
			return a.Replica - b.Replica
		}
		return a.Stage - b.Stage
	})
	assume := req.AssumeSpotCapacity
	defaults.Positive(&assume, 4)
	type option struct {
		offer    cloud.Offering
		capacity cloud.CapacityType
		tier     int
		index    int
	}
	var opts []option
	spotLeft := map[int]int{} // option index → spot instances left
	for i, o := range req.Offers {
		if len(req.GPUTypes) > 0 && !slices.Contains(req.GPUTypes, string(o.GPUType)) {
			continue
		}
		if req.Spot != fleet.OnDemandOnly && o.SpotCapacity != 0 && o.SpotPrice > 0 &&
			!req.Avoided.HasZone(o.Zone, req.Now) && !req.Unavailable.Has(o.Key(cloud.Spot), req.Now) {
			left := o.SpotCapacity
			if left < 0 {
				left = assume
			}
			spotLeft[len(opts)] = left
			opts = append(opts, option{offer: o, capacity: cloud.Spot, tier: 0, index: i})
		}
		if req.Spot != fleet.SpotOnly && o.OnDemandPrice > 0 && !req.Unavailable.Has(o.Key(cloud.OnDemand), req.Now) {
			tier := 1
			if req.Spot == fleet.OnDemandOnly {
				tier = 0
			}
			opts = append(opts, option{offer: o, capacity: cloud.OnDemand, tier: tier, index: i})
		}
	}
	// Zone use, kept as slices (in first-use order) so nothing iterates a map.
	var uses []ZoneUse
	uses = append(uses, req.Held...)
	replicaIn := func(pool string, replica int, zone string) int {
		n := 0
		for _, u := range uses {
			if u.Pool == pool && u.Replica == replica && u.Zone == zone {
				n++
			}
		}
		return n
	}
	allIn := func(zone string) int {
		n := 0
		for _, u := range uses {
			if u.Zone == zone {
				n++
			}
		}
		return n
	}
	// nearZone is the zone a slot should share ("" for none): for a prefill stage, the zone of
	// the decode stage whose machine runs the holder it streams to.
	nearZone := func(s Slot) string {
		if s.Pool != PoolPrefill || req.DecodeReplicas <= 0 || req.Depth <= 0 {
			return ""
		}
		to := PrefillHolder(s, req.DecodeReplicas, req.Depth)
		for _, u := range uses {
			if u.Slot == to {
				return u.Zone
			}
		}
		return ""
	}
	var out Placement
	for _, s := range need {
		best := -1
		var bestScore [5]float64
		spotOnly := slices.Contains(req.SpotOnly, s)
		near := nearZone(s)
		for k, o := range opts {
			if o.capacity == cloud.Spot && spotLeft[k] <= 0 || o.capacity != cloud.Spot && spotOnly {
				continue
			}
			far := 0.0
			if near != "" && o.offer.Zone != near {
				far = 1
			}
			score := [5]float64{float64(o.tier), far, float64(replicaIn(s.Pool, s.Replica, o.offer.Zone)), o.offer.Price(o.capacity), float64(allIn(o.offer.Zone))}
			if best < 0 || less(score, bestScore) {
				best, bestScore = k, score
			}
		}
		if best < 0 {
			out.Unplaced = append(out.Unplaced, s)
			continue
		}
		o := opts[best]
		if o.capacity == cloud.Spot {
			spotLeft[best]--
		}
		uses = append(uses, ZoneUse{Slot: s, Zone: o.offer.Zone})
		out.Stages = append(out.Stages, StagePlacement{Slot: s, Key: o.offer.Key(o.capacity), Provider: o.offer.Provider,
			GPUType: o.offer.GPUType, GPUs: o.offer.GPUsPerInstance, PricePerHour: o.offer.Price(o.capacity), OnDemandPrice: o.offer.OnDemandPrice})
	}
	return out
}

// less orders scores lexicographically; equal scores keep the earlier option.
func less(a, b [5]float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// Groups are the Fleet groups that buy a placement: one per offering key, in the order the
// keys first appear.
func (p Placement) Groups() []fleet.Group {
	var out []fleet.Group
	for _, s := range p.Stages {
		i := slices.IndexFunc(out, func(g fleet.Group) bool { return g.Key == s.Key })
		if i < 0 {
			out = append(out, fleet.Group{Key: s.Key, Count: 1})
			continue
		}
		out[i].Count++
	}
	return out
}

// SplitLayers splits a model's layers evenly over the stages, the first stages taking one
// more when they do not divide: 10 layers over 3 stages are [0,4) [4,7) [7,10).
func SplitLayers(layers, stages int) []LayerRange {
	if stages <= 0 {
		return nil
	}
	base, extra := layers/stages, layers%stages
	out := make([]LayerRange, stages)
	first := 0
	for s := range out {
		n := base
		if s < extra {
			n++
		}
		out[s] = LayerRange{First: first, End: first + n}
		first += n
	}
	return out
}
