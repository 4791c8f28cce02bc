package policy

import (
	"fmt"
	"sort"
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/planner"
)

// Running is what a running job knows at one of its decision points, for DecideRunning: the
// same things the simulator shows the policy at a step, taken from the job's state instead
// of a trace.
type Running struct {
	Iterations int64 `json:"iterations"`
	// Done is the iterations trained; Checkpointed those a preemption would not lose.
	Done         float64 `json:"done"`
	Checkpointed float64 `json:"checkpointed"`
	MaxGPUs      int     `json:"max_gpus"`
	// Elapsed is the provider's time since the job started; Deadline the time it must be
	// done by, from the same start (0: none).
	Elapsed  time.Duration `json:"elapsed"`
	Deadline time.Duration `json:"deadline,omitempty"`
	// Restart is how long a change of the held machines stops training (0: DefaultRestart).
	Restart time.Duration `json:"restart,omitempty"`
	// Every is how often the job decides (the simulator's step).
	Every time.Duration `json:"every,omitempty"`
	// Spot and OnDemand are the GPUs the job holds per zone; Preempted those it lost since
	// its last decision.
	Spot      Placement      `json:"spot,omitempty"`
	OnDemand  Placement      `json:"on_demand,omitempty"`
	Preempted map[string]int `json:"preempted,omitempty"`
	// Restarting is true while the job is stopped for a (re)plan.
	Restarting bool `json:"restarting,omitempty"`
	// SpentUSD is what the job has paid so far (the policy keeps a deferred purchase within
	// the best on-demand plan's bill).
	SpentUSD float64 `json:"spent_usd,omitempty"`
}

// Decision is DecideRunning's answer: what to hold, and the policy's memory for the next call.
type Decision struct {
	Request Request        `json:"request"`
	Memory  DeadlineMemory `json:"memory"`
	// Spot and OnDemand are the request placed on the market as the simulator places it:
	// the spot GPUs per zone (held ones first, then free capacity in the request's order)
	// and where the on-demand GPUs go. A job plans within them.
	Spot     Placement `json:"spot,omitempty"`
	OnDemand Placement `json:"on_demand,omitempty"`
	// OnDemandGPUs is the job's best on-demand plan for its deadline, the baseline the
	// policy prices against.
	OnDemandGPUs int `json:"on_demand_gpus"`
	// OnDemandUSDPerGPUHour is what one of the decision's on-demand GPUs costs per hour: the
	// on-demand price of the instance type the policy reasons in (OffersMarket), in the zone
	// of OnDemand, per GPU (the market's highest on-demand price where that zone has no
	// offering of it). A job prices what each purchase adds with it.
	OnDemandUSDPerGPUHour float64 `json:"on_demand_usd_per_gpu_hour,omitempty"`
}

// DecideRunning makes one decision of schooner's deadline policy for a running job: the same
// code the policy simulator runs, on a market read from the job's offerings (OffersMarket)
// and the planner's throughput of the job's model. mem is what the policy remembered after
// the previous decision.
func DecideRunning(r Running, offers []cloud.Offering, mem DeadlineMemory, model *planner.ModelProfile, net *planner.Network, globalBatch int) (Decision, error) {
	if r.Iterations <= 0 || r.MaxGPUs <= 0 {
		return Decision{}, fmt.Errorf("policy: a running job needs iterations and max_gpus, got %d and %d", r.Iterations, r.MaxGPUs)
	}
	m, capacity, err := OffersMarket(offers, r.Spot, r.Every, r.MaxGPUs)
	if err != nil {
		return Decision{}, err
	}
	job := Job{Iterations: r.Iterations, MaxGPUs: r.MaxGPUs, Restart: r.Restart,
		Throughput: &PlannerThroughput{Model: model, Network: net, GlobalBatch: globalBatch, Market: m}}.withDefaults(m)
	p := resumeDeadlineAware(mem)
	v := &View{Elapsed: r.Elapsed, Deadline: r.Deadline, Done: r.Done, Checkpointed: r.Checkpointed, Job: job, Market: m,
		Capacity: capacity, Spot: clean(r.Spot, m), OnDemand: clean(r.OnDemand, m), Preempted: r.Preempted,
		Restarting: r.Restarting, Baseline: BestOnDemand(job, m, r.Deadline), SpentUSD: r.SpentUSD}
	req := p.Decide(v)
	spot := fill(req, v.Spot, capacity)
	od := placeOnDemand(req, v.OnDemand, spot, m.Zones)
	return Decision{Request: req, Memory: p.Memory(r.Elapsed), Spot: spot, OnDemand: od,
		OnDemandGPUs: v.Baseline.GPUs, OnDemandUSDPerGPUHour: onDemandPerGPUHour(offers, m, od)}, nil
}

// onDemandPerGPUHour is the on-demand price per GPU-hour of m's instance type in the zone of
// od (one zone: placeOnDemand places every on-demand GPU in one), from the offerings; the
// market's on-demand price, the highest of its zones, where od is empty or its zone has no
// offering of that type.
func onDemandPerGPUHour(offers []cloud.Offering, m *Market, od Placement) float64 {
	price := m.OnDemandPrice
	for _, o := range offers {
		if o.InstanceType == m.InstanceType && o.OnDemandPrice > 0 && od[o.Zone] > 0 {
			price = o.OnDemandPrice
			break
		}
	}
	return price / float64(m.GPUsPerInst)
}

// OffersMarket reads the market a running job meets from its offerings: of the instance
// types small enough for maxGPUs (0: any), the one with the most spot GPUs on offer is the one
// the policy reasons in, as the simulator reasons in its trace's type (ties: the smaller
// instance, whose GPUs come in finer steps, then the cheaper per GPU); its zones, its spot
// price per zone and its highest on-demand price. capacity is the spot GPUs each zone could
// hold now: what is on offer there plus what the job holds. every is the decision step
// (default 5 minutes).
func OffersMarket(offers []cloud.Offering, held Placement, every time.Duration, maxGPUs int) (*Market, map[string]int, error) {
	type shape struct {
		gpus    int
		perGPU  float64
		example cloud.Offering
	}
	shapes := map[string]*shape{}
	for _, o := range offers {
		if o.SpotPrice <= 0 || o.OnDemandPrice <= 0 {
			continue
		}
		per := max(o.GPUsPerInstance, 1)
		if maxGPUs > 0 && per > maxGPUs {
			continue
		}
		s := shapes[o.InstanceType]
		if s == nil {
			s = &shape{example: o, perGPU: o.SpotPrice / float64(per)}
			shapes[o.InstanceType] = s
		}
		s.gpus += max(o.SpotCapacity, 0) * per
		s.perGPU = min(s.perGPU, o.SpotPrice/float64(per))
	}
	if len(shapes) == 0 {
		return nil, nil, fmt.Errorf("policy: no offering of at most %d GPUs has both a spot and an on-demand price", maxGPUs)
	}
	types := make([]string, 0, len(shapes))
	for t := range shapes {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool {
		a, b := shapes[types[i]], shapes[types[j]]
		if a.gpus != b.gpus {
			return a.gpus > b.gpus
		}
		if pa, pb := a.example.GPUsPerInstance, b.example.GPUsPerInstance; pa != pb {
			return pa < pb
		}
		if a.perGPU != b.perGPU {
			return a.perGPU < b.perGPU
		}
		return types[i] < types[j]
	})
	pick := shapes[types[0]].example
	if every <= 0 {
		every = 5 * time.Minute
	}
	m := &Market{Source: "offerings", Provider: pick.Provider, InstanceType: pick.InstanceType, GPU: pick.GPUType,
		GPUsPerInst: max(pick.GPUsPerInstance, 1), SpotPrice: map[string]float64{}, Gap: every}
	capacity := map[string]int{}
	for _, o := range offers {
		if o.InstanceType != m.InstanceType || o.SpotPrice <= 0 {
			continue
		}
		if _, seen := m.SpotPrice[o.Zone]; !seen {
			m.Zones = append(m.Zones, o.Zone)
			m.SpotPrice[o.Zone] = o.SpotPrice
		}
		m.SpotPrice[o.Zone] = min(m.SpotPrice[o.Zone], o.SpotPrice)
		m.OnDemandPrice = max(m.OnDemandPrice, o.OnDemandPrice)
		capacity[o.Zone] += max(o.SpotCapacity, 0) * m.GPUsPerInst
	}
	sort.Strings(m.Zones)
	for z, g := range held {
		if _, ok := m.SpotPrice[z]; ok {
			capacity[z] += g
		}
	}
	return m, capacity, nil
}

// clean keeps the zones of p the market knows (GPUs held elsewhere, in another shape's
// zone, are outside what the policy decides on).
func clean(p Placement, m *Market) Placement {
	out := Placement{}
	for z, g := range p {
		if _, ok := m.SpotPrice[z]; ok && g > 0 {
			out[z] = g
		}
	}
	return out
}
