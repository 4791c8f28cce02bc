package policy

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/schooner-ml/schooner/cloud/catalog"
	"github.com/schooner-ml/schooner/planner"
)

// Placement is how many GPUs a job holds in each zone (spot and on-demand alike: the
// iteration time does not depend on how a GPU is bought).
type Placement map[string]int

// GPUs is the placement's total. Workflows call it (TrainingJob's deadline policy): a sum of
// integers does not depend on the order the map is walked in.
func (p Placement) GPUs() int {
	n := 0
	//workflowcheck:ignore a sum does not depend on the order
	for _, g := range p {
		n += g
	}
	return n
}

// Plus is every GPU of p and q, per zone (a job's spot and on-demand GPUs together).
func (p Placement) Plus(q Placement) Placement {
	out := Placement{}
	for z, g := range p {
		out[z] += g
	}
	for z, g := range q {
		out[z] += g
	}
	return out
}

// zones are the zones holding GPUs, in name order.
func (p Placement) zones() []string {
	zones := make([]string, 0, len(p))
	for z, g := range p {
		if g > 0 {
			zones = append(zones, z)
		}
	}
	sort.Strings(zones)
	return zones
}

// key is a canonical string of the placement, for caches.
func (p Placement) key() string {
	var b strings.Builder
	for _, z := range p.zones() {
		b.WriteString(z)
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(p[z]))
		b.WriteByte(';')
	}
	return b.String()
}

// IterTimer gives the seconds one iteration takes on a placement; +Inf when no plan fits it.
type IterTimer interface {
	IterSeconds(p Placement) float64
}

// PlannerThroughput is the planner's answer: the best plan (maximum throughput) on the GPUs
// of a placement, which may leave some of them unused when spreading over zones would be
// slower. Answers are cached by placement, so a simulation plans each distinct placement once.
// Safe for concurrent use.
type PlannerThroughput struct {
	Model       *planner.ModelProfile
	Network     *planner.Network
	GlobalBatch int
	Market      *Market

	mu    sync.Mutex
	cache map[string]float64
}

// IterSeconds implements IterTimer.
func (t *PlannerThroughput) IterSeconds(p Placement) float64 {
	if p.GPUs() == 0 {
		return math.Inf(1)
	}
	k := p.key()
	t.mu.Lock()
	v, ok := t.cache[k]
	t.mu.Unlock()
	if ok {
		return v
	}
	v = t.plan(p)
	t.mu.Lock()
	if t.cache == nil {
		t.cache = map[string]float64{}
	}
	t.cache[k] = v
	t.mu.Unlock()
	return v
}

func (t *PlannerThroughput) plan(p Placement) float64 {
	m := t.Market
	var pools []planner.Pool
	for z, g := range p {
		if g <= 0 {
			continue
		}
		pools = append(pools, planner.Pool{Provider: m.provider(), Region: catalog.RegionOf(m.provider(), z), Zone: z,
			InstanceType: m.InstanceType, GPU: m.GPU, GPUsPerNode: m.GPUsPerInst, GPUs: g,
			USDPerGPUHour: m.OnDemandPrice / float64(m.GPUsPerInst)})
	}
	sort.Slice(pools, func(i, j int) bool { return pools[i].Zone < pools[j].Zone })
	res, err := planner.Search(planner.Request{Model: t.Model, Network: t.Network, Pools: pools,
		GlobalBatch: t.GlobalBatch, Objective: planner.MaxThroughput, TopK: 1})
	if err != nil {
		return math.Inf(1)
	}
	return res.Best.Estimate.IterTime
}

// Check plans the job on one zone's largest placement and says why when nothing fits, so
// that a model too large for the market's GPUs is an error before any simulation.
func (t *PlannerThroughput) Check(maxGPUs int) error {
	if len(t.Market.Zones) == 0 {
		return errors.New("policy: the market has no zones")
	}
	if per := t.Market.GPUsPerInst; maxGPUs < per {
		return fmt.Errorf("policy: at most %d GPUs is less than one %s (%d GPUs a machine): raise max_gpus to a multiple of %d, or use traces of a smaller instance type",
			maxGPUs, t.Market.InstanceType, per, per)
	}
	p := Placement{t.Market.Zones[0]: maxGPUs}
	if math.IsInf(t.IterSeconds(p), 1) {
		var pools []planner.Pool
		for z, g := range p {
			pools = append(pools, planner.Pool{Provider: t.Market.provider(), Region: catalog.RegionOf(t.Market.provider(), z), Zone: z,
				InstanceType: t.Market.InstanceType, GPU: t.Market.GPU, GPUsPerNode: t.Market.GPUsPerInst, GPUs: g})
		}
		_, err := planner.Search(planner.Request{Model: t.Model, Network: t.Network, Pools: pools,
			GlobalBatch: t.GlobalBatch, Objective: planner.MaxThroughput, TopK: 1})
		return fmt.Errorf("policy: no plan of the model on %d %s GPUs: %w", maxGPUs, t.Market.GPU, err)
	}
	return nil
}
