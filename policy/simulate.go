package policy

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Run is one simulated run of a job under a policy.
type Run struct {
	Policy string `json:"policy"`
	// Start is where in the trace the job started; Deadline is relative to it (0: none).
	Start    time.Duration `json:"start_ns"`
	Deadline time.Duration `json:"deadline_ns"`
	// Finished is false when the run was stopped at its limit with iterations left.
	Finished bool          `json:"finished"`
	Duration time.Duration `json:"duration_ns"`
	Met      bool          `json:"met_deadline"`
	CostUSD  float64       `json:"cost_usd"`
	// OnDemandUSD is the part of CostUSD spent on on-demand capacity.
	OnDemandUSD float64 `json:"on_demand_usd"`
	// GPUHours is every held GPU's time, idle and restarting included.
	GPUHours    float64 `json:"gpu_hours"`
	Preemptions int     `json:"preemptions"`
	Restarts    int     `json:"restarts"`
	// Lost is the iterations redone after preemptions.
	Lost      float64    `json:"lost_iterations"`
	Purchases []Purchase `json:"on_demand_purchases,omitempty"`
}

// Purchase records a step at which a policy added on-demand GPUs, and why.
type Purchase struct {
	At   time.Duration `json:"at_ns"`
	GPUs int           `json:"gpus"`
	Why  string        `json:"why"`
}

// Options bound a simulated run.
type Options struct {
	// Deadline is the time the job has from its start (0: none).
	Deadline time.Duration
	// Limit stops a run that has not finished (default: 4 × the deadline, or 30 days
	// without one).
	Limit time.Duration
	// Baseline is the best on-demand plan, shown to policies (zero GPUs: computed).
	Baseline OnDemandPlan
	// Observe, when set, sees every decision: what the policy was shown and what it asked
	// for (schooner policy explain prints them).
	Observe func(v *View, req Request)
}

// Simulate runs job from start (an offset into the market's traces) under a fresh policy of
// mk. It steps at the trace's tick: capacity is read, held spot GPUs above it are preempted
// (the job saved on the notice, unless it ignores notices: then progress goes back to the
// last checkpoint), the policy decides, the market fills what it can, and the step's time is
// billed per second (machines just bought from the end of their boot) and trained at the
// planner's pace, less the restart pause whenever the held machines changed.
func Simulate(job Job, m *Market, mk Maker, start time.Duration, o Options) (Run, error) {
	if err := job.Validate(); err != nil {
		return Run{}, err
	}
	job = job.withDefaults(m)
	if o.Baseline.GPUs <= 0 {
		o.Baseline = BestOnDemand(job, m, o.Deadline)
	}
	limit := o.Limit
	if limit <= 0 {
		limit = 4 * o.Deadline
		if o.Deadline <= 0 {
			limit = 30 * 24 * time.Hour
		}
	}
	s := &state{job: job, m: m, p: mk.New(), spot: Placement{}, od: Placement{},
		run: Run{Policy: mk.Name, Start: start, Deadline: o.Deadline}}
	for t := time.Duration(0); t < limit; t += m.Gap {
		if s.step(t, start, o) {
			break
		}
	}
	if !s.run.Finished {
		s.run.Duration = limit
	}
	if math.IsNaN(s.run.CostUSD) {
		return s.run, fmt.Errorf("policy %s: the simulated cost is not a number", mk.Name)
	}
	return s.run, nil
}

type state struct {
	job        Job
	m          *Market
	p          Policy
	spot, od   Placement
	done, ckpt float64
	pauseUntil time.Duration
	// booting are the instances the last change bought, per zone, unbilled until bootUntil.
	bootingSpot, bootingOD map[string]int
	bootUntil              time.Duration
	run                    Run
}

// step simulates [t, t+gap) and reports whether the job finished in it.
func (s *state) step(t, start time.Duration, o Options) bool {
	capacity := map[string]int{}
	preempted := map[string]int{}
	lost := false
	for _, z := range s.m.Zones {
		c := s.m.Capacity(z, start+t) * s.m.GPUsPerInst
		capacity[z] = c
		if s.spot[z] > c {
			preempted[z] = s.spot[z] - c
			s.spot[z] = c
			s.run.Preemptions++
			lost = true
		}
	}
	if lost && !s.job.IgnoresNotice {
		s.ckpt = s.done // saved on the preemption notice
	}
	if lost {
		s.run.Lost += s.done - s.ckpt
		s.done = s.ckpt
	}
	v := &View{Elapsed: t, Deadline: o.Deadline, Done: s.done, Checkpointed: s.ckpt, Job: s.job, Market: s.m,
		Capacity: capacity, Spot: clone(s.spot), OnDemand: clone(s.od), Preempted: preempted,
		Restarting: t < s.pauseUntil, Baseline: o.Baseline, SpentUSD: s.run.CostUSD}
	req := s.p.Decide(v)
	if o.Observe != nil {
		o.Observe(v, req)
	}
	spot := fill(req, s.spot, capacity)
	od := s.onDemand(req, spot)
	if added := od.GPUs() - s.od.GPUs(); added > 0 {
		s.run.Purchases = append(s.run.Purchases, Purchase{At: t, GPUs: added, Why: req.Why})
	}
	if lost || !equal(spot, s.spot) || !equal(od, s.od) {
		if !lost {
			s.ckpt = s.done // a chosen change checkpoints first: nothing is redone
		}
		if spot.GPUs()+od.GPUs() > 0 {
			s.bootingSpot, s.bootingOD = s.bought(s.spot, spot), s.bought(s.od, od)
			s.bootUntil = t + s.job.Boot
			pause := s.job.Restart
			if len(s.bootingSpot)+len(s.bootingOD) == 0 {
				pause -= s.job.Boot // nothing to boot: the survivors relaunch and restore
			}
			s.pauseUntil = t + pause
			s.run.Restarts++
		}
	}
	s.spot, s.od = spot, od
	return s.advance(t)
}

// advance trains and bills from t to the next tick or to the end of the job.
func (s *state) advance(t time.Duration) bool {
	end := t + s.m.Gap
	held := s.spot.Plus(s.od)
	from := min(max(t, s.pauseUntil), end)
	pace := s.job.Throughput.IterSeconds(held)
	finished := false
	if held.GPUs() > 0 && !math.IsInf(pace, 1) {
		left := float64(s.job.Iterations) - s.done
		can := (end - from).Seconds() / pace
		if can >= left {
			end = from + seconds(left*pace)
			s.done = float64(s.job.Iterations)
			finished = true
		} else {
			s.done += can
		}
		s.ckpt = math.Max(s.ckpt, math.Floor(s.done/float64(s.job.CheckpointEvery))*float64(s.job.CheckpointEvery))
	}
	s.bill(t, end-t)
	if finished {
		s.run.Finished = true
		s.run.Duration = end
		s.run.Met = s.run.Deadline <= 0 || end <= s.run.Deadline
	}
	return finished
}

// bought is how many instances per zone from holds that were not in held.
func (s *state) bought(held, holds Placement) map[string]int {
	out := map[string]int{}
	for z, g := range holds {
		if n := s.instances(g) - s.instances(held[z]); n > 0 {
			out[z] = n
		}
	}
	return out
}

func (s *state) instances(gpus int) int {
	return int(math.Ceil(float64(gpus) / float64(s.m.GPUsPerInst)))
}

// bill charges [t, t+d) of everything held, per instance, spot at its zone's price; the
// instances still booting are charged from bootUntil.
func (s *state) bill(t, d time.Duration) {
	h := d.Hours()
	boot := (min(s.bootUntil, t+d) - t).Hours()
	charge := func(z string, g int, price float64, booting map[string]int) float64 {
		n := s.instances(g)
		b := min(booting[z], n)
		if boot <= 0 {
			b = 0
		}
		s.run.GPUHours += float64(g) * h
		return float64(n)*price*h - float64(b)*price*boot
	}
	for z, g := range s.spot {
		s.run.CostUSD += charge(z, g, s.m.SpotPrice[z], s.bootingSpot)
	}
	for z, g := range s.od {
		c := charge(z, g, s.m.OnDemandPrice, s.bootingOD)
		s.run.CostUSD += c
		s.run.OnDemandUSD += c
	}
}

// onDemand places the requested on-demand GPUs: where they are already held, else in the
// requested zone, else beside the most spot GPUs.
func (s *state) onDemand(req Request, spot Placement) Placement {
	return placeOnDemand(req, s.od, spot, s.m.Zones)
}

// placeOnDemand is where a request's on-demand GPUs go: the zone it names, else the zone
// the job holds on-demand GPUs in, else the zone with the most spot GPUs (the fastest links
// to them), else the request's first zone.
func placeOnDemand(req Request, held, spot Placement, zones []string) Placement {
	if req.OnDemand <= 0 {
		return Placement{}
	}
	zone := req.OnDemandZone
	if zone == "" {
		for _, z := range zones {
			if held[z] > 0 {
				zone = z
			}
		}
	}
	if zone == "" {
		best := -1
		for _, z := range zones {
			if spot[z] > best {
				zone, best = z, spot[z]
			}
		}
		if best == 0 && len(req.Zones) > 0 {
			zone = req.Zones[0]
		}
	}
	return Placement{zone: req.OnDemand}
}

// fill is what the market gives a spot request: held GPUs in listed zones are kept first
// (no churn), then the listed zones' free capacity is taken in order. A gang is all in one
// zone or nothing.
func fill(req Request, held Placement, capacity map[string]int) Placement {
	out := Placement{}
	if req.Spot <= 0 {
		return out
	}
	if req.Gang {
		for z, g := range held {
			if g == req.Spot && slices.Contains(req.Zones, z) {
				out[z] = g
				return out
			}
		}
		for _, z := range req.Zones {
			if capacity[z] >= req.Spot {
				out[z] = req.Spot
				return out
			}
		}
		return out
	}
	left := req.Spot
	for _, z := range req.Zones {
		k := min(held[z], left)
		if k > 0 {
			out[z] = k
			left -= k
		}
	}
	for _, z := range req.Zones {
		k := min(capacity[z]-out[z], left)
		if k > 0 {
			out[z] += k
			left -= k
		}
	}
	return out
}

func clone(p Placement) Placement {
	out := Placement{}
	for z, g := range p {
		if g > 0 {
			out[z] = g
		}
	}
	return out
}

func equal(a, b Placement) bool { return a.key() == b.key() }
