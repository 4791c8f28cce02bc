package policy

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/schooner-ml/schooner/internal/defaults"
)

// The serving policies SimulateServing compares (`schooner demo serve --policy` runs the same
// three through the whole stack).
const (
	// ServeSpotAware is schooner's: spot first, on-demand for a stage no spot zone can take,
	// a replacement bought at the preemption notice, stages on on-demand moved back to spot
	// every ReturnEvery when spot has room.
	ServeSpotAware = "spot-aware"
	// ServeRestartOnly is serving on spot without schooner: spot only, notices ignored, a
	// lost stage replaced once its machine is gone, waiting while no zone has room.
	ServeRestartOnly = "restart-only"
	// ServeOnDemand holds on-demand machines only: the cost baseline.
	ServeOnDemand = "on-demand"
)

// ServePolicies are the serving policies, the baseline last.
var ServePolicies = []string{ServeSpotAware, ServeRestartOnly, ServeOnDemand}

// Serving is a deployment SimulateServing runs: Stages machines (one stage each, a replica's
// stages spread over zones) for Length, and the clouds' timings.
type Serving struct {
	Stages int
	Length time.Duration
	// Boot is a machine's time from purchase to running (unbilled); StartUp the stage's
	// worker start and KV restore after it; Notice the warning before a preemption (the
	// market's AWS defaults 2 min, 2 min; StartUp 30 s).
	Boot, StartUp, Notice time.Duration
	// ReturnEvery is how often stages on on-demand look for spot room (default 10 min);
	// AvoidFor how long a zone that preempted is left out (default 10 min).
	ReturnEvery, AvoidFor time.Duration
}

func (s Serving) withDefaults() Serving {
	defaults.Positive(&s.Boot, 2*time.Minute)
	defaults.Positive(&s.StartUp, 30*time.Second)
	defaults.Positive(&s.Notice, 2*time.Minute)
	defaults.Positive(&s.ReturnEvery, 10*time.Minute)
	defaults.Positive(&s.AvoidFor, 10*time.Minute)
	return s
}

// ServingRun is one simulated deployment.
type ServingRun struct {
	Policy string        `json:"policy"`
	Start  time.Duration `json:"start_ns"`
	// CostUSD is what the machines cost, billed from running; OnDemandUSD the same stages on
	// on-demand machines for the whole run (the baseline), and Ratio the one over the other.
	CostUSD     float64 `json:"cost_usd"`
	OnDemandUSD float64 `json:"on_demand_usd"`
	Ratio       float64 `json:"ratio"`
	// Down is the time some stage had no ready worker (start-up included), Available the
	// share of the run it did not.
	Down      time.Duration `json:"down_ns"`
	Available float64       `json:"available"`
	// OnDemandHours are the stage-hours on on-demand machines, SpotHours on spot ones, and
	// SpotUSD what the spot ones cost (CostUSD less it is the on-demand machines'): the split a
	// bill by machine (sim.UsageRecord) is compared with.
	OnDemandHours float64 `json:"on_demand_stage_hours"`
	SpotHours     float64 `json:"spot_stage_hours"`
	SpotUSD       float64 `json:"spot_usd"`
	Preemptions   int     `json:"preemptions"`
	Returns       int     `json:"returns_to_spot"`
}

// serveStage is one stage's machine: its zone and capacity, when it runs (billed from) and
// when its worker is ready; waiting stages have none.
type serveStage struct {
	zone      string
	spot, has bool
	from      time.Duration
	ready     time.Duration
}

type serveSim struct {
	m      *Market
	o      Serving
	policy string
	start  time.Duration
	stages []serveStage
	avoid  map[string]time.Duration
	// downSince is when each stage lost its worker (-1: it has one or one is coming); down
	// are the closed intervals.
	downSince []time.Duration
	down      [][2]time.Duration
	run       ServingRun
	nextBack  time.Duration
}

// SimulateServing replays the market's traces from start for o.Length under policy. At each
// tick the spot stages above a zone's capacity are preempted (the zone avoided for AvoidFor):
// spot-aware bought their replacement at the notice, so a stage is down only for what its
// boot and start-up take beyond the notice; restart-only buys it now, on spot, or waits. A
// stage without a machine is placed (spot-aware: spot, else on-demand; restart-only: spot;
// on-demand: on-demand) in the zone holding fewest of the deployment's stages, then the
// cheapest. Every ReturnEvery spot-aware moves stages on on-demand to spot where there is
// room; the on-demand machine is released once the spot one is ready (no downtime). Machines
// are billed per second from running to release; a stage is down from its loss to its
// replacement's readiness.
func SimulateServing(m *Market, o Serving, policy string, start time.Duration) (ServingRun, error) {
	if !slices.Contains(ServePolicies, policy) {
		return ServingRun{}, fmt.Errorf("policy: unknown serving policy %q (known: %v)", policy, ServePolicies)
	}
	if o.Stages <= 0 || o.Length <= 0 {
		return ServingRun{}, fmt.Errorf("policy: a serving run needs stages and a length, got %d and %s", o.Stages, o.Length)
	}
	o = o.withDefaults()
	s := &serveSim{m: m, o: o, policy: policy, start: start, stages: make([]serveStage, o.Stages), avoid: map[string]time.Duration{},
		downSince: make([]time.Duration, o.Stages), run: ServingRun{Policy: policy, Start: start}}
	for t := time.Duration(0); t < o.Length; t += m.Gap {
		s.step(t)
	}
	for i := range s.stages {
		s.release(i, o.Length)
		if s.downSince[i] >= 0 {
			s.down = append(s.down, [2]time.Duration{s.downSince[i], o.Length})
		}
	}
	s.run.OnDemandUSD = float64(o.Stages) * m.OnDemandPrice * (o.Length - o.Boot).Hours()
	if s.run.OnDemandUSD > 0 {
		s.run.Ratio = s.run.CostUSD / s.run.OnDemandUSD
	}
	s.run.Down = union(s.down, o.Length)
	s.run.Available = 1 - s.run.Down.Seconds()/o.Length.Seconds()
	return s.run, nil
}

func (s *serveSim) step(t time.Duration) {
	held := s.held()
	for _, z := range s.m.Zones {
		over := held[z] - s.m.Capacity(z, s.start+t)
		for i := len(s.stages) - 1; i >= 0 && over > 0; i-- {
			if st := s.stages[i]; st.has && st.spot && st.zone == z {
				s.preempt(i, t)
				over--
			}
		}
	}
	for i := range s.stages {
		if !s.stages[i].has {
			s.place(i, t, t)
		}
	}
	if s.policy == ServeSpotAware && t >= s.nextBack {
		s.nextBack = t + s.o.ReturnEvery
		for i, st := range s.stages {
			if st.has && !st.spot && st.ready <= t {
				if z, ok := s.spotZone(t, i); ok {
					switchAt := t + s.o.Boot + s.o.StartUp
					s.release(i, switchAt)
					s.stages[i] = serveStage{zone: z, spot: true, has: true, from: t + s.o.Boot, ready: switchAt}
					s.run.Returns++
				}
			}
		}
	}
}

// preempt takes stage i's machine at t and buys its replacement (spot-aware: at the notice).
func (s *serveSim) preempt(i int, t time.Duration) {
	s.run.Preemptions++
	s.release(i, t)
	s.avoid[s.stages[i].zone] = t + s.o.AvoidFor
	s.stages[i].has = false
	s.downSince[i] = t
	if s.policy == ServeSpotAware {
		s.place(i, t, max(t-s.o.Notice, 0))
	}
}

// place buys stage i a machine decided at t (bought at `at`), if the policy finds one.
func (s *serveSim) place(i int, t, at time.Duration) {
	st := serveStage{has: true, from: at + s.o.Boot, ready: at + s.o.Boot + s.o.StartUp}
	switch z, ok := s.spotZone(t, i); { // never ok for the on-demand policy
	case ok:
		st.zone, st.spot = z, true
	case s.policy != ServeRestartOnly:
		st.zone = s.fewest(i, s.m.Zones)
	default:
		return
	}
	s.stages[i] = st
	if since := s.downSince[i]; since >= 0 {
		s.down = append(s.down, [2]time.Duration{since, max(st.ready, since)})
		s.downSince[i] = -1
	}
}

// spotZone is the zone with spot room at t (not avoided) holding fewest stages, then the
// cheapest; none for the on-demand policy.
func (s *serveSim) spotZone(t time.Duration, self int) (string, bool) {
	if s.policy == ServeOnDemand {
		return "", false
	}
	held := s.held()
	var room []string
	for _, z := range s.m.Zones {
		if s.m.Capacity(z, s.start+t) > held[z] && (s.policy == ServeRestartOnly || s.avoid[z] <= t) {
			room = append(room, z)
		}
	}
	if len(room) == 0 {
		return "", false
	}
	return s.fewest(self, room), true
}

// fewest is the zone of zones holding fewest of the other stages, then the cheapest spot.
func (s *serveSim) fewest(self int, zones []string) string {
	best, bestN := "", math.MaxInt
	for _, z := range zones {
		n := 0
		for j, st := range s.stages {
			if j != self && st.has && st.zone == z {
				n++
			}
		}
		if n < bestN || n == bestN && s.m.SpotPrice[z] < s.m.SpotPrice[best] {
			best, bestN = z, n
		}
	}
	return best
}

func (s *serveSim) held() map[string]int {
	out := map[string]int{}
	for _, st := range s.stages {
		if st.has && st.spot {
			out[st.zone]++
		}
	}
	return out
}

// release bills stage i's machine to `to` (from its running start).
func (s *serveSim) release(i int, to time.Duration) {
	st := s.stages[i]
	if !st.has || to <= st.from {
		return
	}
	price := s.m.OnDemandPrice
	if st.spot {
		price = s.m.SpotPrice[st.zone]
	}
	h := (to - st.from).Hours()
	s.run.CostUSD += price * h
	if st.spot {
		s.run.SpotHours += h
		s.run.SpotUSD += price * h
	} else {
		s.run.OnDemandHours += h
	}
	s.stages[i].from = to
}

// union is the length of the intervals' union within [0, limit) (open ones end at limit).
func union(iv [][2]time.Duration, limit time.Duration) time.Duration {
	var xs [][2]time.Duration
	for _, v := range iv {
		end := min(v[1], limit)
		if end > v[0] {
			xs = append(xs, [2]time.Duration{v[0], end})
		}
	}
	slices.SortFunc(xs, func(a, b [2]time.Duration) int { return int(a[0] - b[0]) })
	var total, curS, curE time.Duration
	first := true
	for _, v := range xs {
		if first || v[0] > curE {
			if !first {
				total += curE - curS
			}
			curS, curE, first = v[0], v[1], false
			continue
		}
		curE = max(curE, v[1])
	}
	if !first {
		total += curE - curS
	}
	return total
}
