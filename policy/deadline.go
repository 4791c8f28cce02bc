package policy

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// DeadlineAware is schooner's policy. Each step it holds the cheapest placement whose
// remaining run fits the time left with a margin (two restarts and 5% of the time left), in
// this order of preference:
//
//   - spot alone, taking the fastest spot placement within speedPremium of the cheapest: time
//     banked on spot is on-demand time not bought later;
//   - when spot is short, still spot alone while the fastest on-demand finish (with
//     deferMargin of room) fits after one more step and would not take the job's bill past
//     its best on-demand plan's: the purchase waits for spot to return;
//   - spot plus the fewest on-demand GPUs that keep the deadline;
//   - without the margin, the cheapest placement that keeps the deadline and whose spot
//     could be replaced by the fastest on-demand finish in time at any step
//     (cheapestRecoverable);
//   - the fastest placement it can get.
//
// It keeps what it holds while that still fits and nothing is a tenth cheaper (a change costs
// a restart), moves back to spot alone as soon as a spot placement fits, and ranks zones by
// their preemptions in the last day, then price, then capacity; spot runtimes are inflated by
// the zones' recent preemptions, so a job in a zone that keeps preempting buys its margin
// earlier. Its safety net (safetyNet) moves the job to on-demand alone, for good, once a
// preemption of its spot could no longer be recovered before the deadline (recoverable).
func DeadlineAware() Maker {
	return Maker{Name: "schooner-deadline", About: "schooner: cheapest placement that keeps the deadline, least on-demand",
		New: func() Policy { return &deadlineAware{} }}
}

// riskWindow is how far back preemptions count against a zone.
const riskWindow = 24 * time.Hour

type deadlineAware struct {
	preemptions []ZoneEvent
	// critical is set once a preemption more would miss the deadline even on on-demand:
	// the job then stays on on-demand to the end.
	critical bool
}

// ZoneEvent is a preemption the deadline policy remembers: when (since the job's start) and
// where.
type ZoneEvent struct {
	At   time.Duration `json:"at"`
	Zone string        `json:"zone"`
}

// DeadlineMemory is what the deadline policy remembers between decisions: the preemptions
// of the last riskWindow and whether its safety net has fired. A controller that decides in
// separate calls (the TrainingJob, through an activity) carries it from one to the next.
type DeadlineMemory struct {
	Preemptions []ZoneEvent `json:"preemptions,omitempty"`
	Critical    bool        `json:"critical,omitempty"`
}

// resumeDeadlineAware is schooner's policy with what it remembered after its last decision.
func resumeDeadlineAware(m DeadlineMemory) *deadlineAware {
	return &deadlineAware{preemptions: append([]ZoneEvent(nil), m.Preemptions...), critical: m.Critical}
}

// Memory is what the policy remembers now; preemptions older than the risk window, which no
// decision reads again, are dropped so the memory stays small.
func (d *deadlineAware) Memory(now time.Duration) DeadlineMemory {
	var keep []ZoneEvent
	for _, e := range d.preemptions {
		if now-e.At < riskWindow {
			keep = append(keep, e)
		}
	}
	return DeadlineMemory{Preemptions: keep, Critical: d.critical}
}

// option is a placement the policy could hold.
type option struct {
	spot, od Placement
	odZone   string
	runtime  time.Duration
	costUSD  float64
}

func (d *deadlineAware) Decide(v *View) Request {
	// in name order, so the memory is the same from run to run
	for _, z := range Placement(v.Preempted).zones() {
		d.preemptions = append(d.preemptions, ZoneEvent{At: v.Elapsed, Zone: z})
	}
	zones := d.order(v)
	budget := v.TimeLeft() - (2*v.Job.Restart + v.TimeLeft()/20)
	if v.Deadline <= 0 {
		budget = never
	}
	ods := d.onDemandOptions(v, zones)
	if v.Deadline > 0 {
		if safe, ok := d.safetyNet(v, zones, ods); ok {
			return safe
		}
	}
	held := d.evaluate(v, clone(v.Spot), clone(v.OnDemand))
	holding := held.spot.GPUs()+held.od.GPUs() > 0 && len(v.Preempted) == 0
	cands := d.candidates(v, zones)
	best, ok := d.cheapest(v, cands, budget, false)
	why := ""
	if !ok && v.Deadline > 0 {
		// Spot progress costs a third of on-demand progress: while the deadline can still be
		// kept by going fast later, run on the spot there is and buy nothing yet.
		if spot, deferrable := d.deferral(v, zones, budget); deferrable {
			best, ok = spot, true
		}
	}
	if !ok {
		if best, ok = d.cheapest(v, cands, budget, true); ok {
			why = fmt.Sprintf("spot short: %d spot GPUs can be had, the deadline needs %d on-demand more",
				best.spot.GPUs(), best.od.GPUs())
		}
	}
	switch {
	case holding && held.runtime <= budget && (!ok || best.costUSD > switchGain*held.costUSD):
		// What is held still keeps the deadline and nothing is much cheaper: a change
		// would cost a restart for little.
		return d.keep(held, zones)
	case ok:
		return d.request(best, zones, why)
	}
	// Nothing keeps the deadline with the margin, yet a preemption could still be recovered
	// (the safety net has not fired): the cheapest placement that keeps the deadline without
	// the margin, what is held while it does and nothing is much cheaper; only when none
	// keeps it, the fastest. (The fastest alone bought max_gpus on-demand where fewer kept
	// the deadline, 1.11x the best on-demand plan's bill.)
	rushed := fastest(ods)
	tight, fits := d.cheapestRecoverable(v, cands, rushed)
	switch {
	case holding && d.keepsFallback(v, held, rushed) && (!fits || tight.costUSD > switchGain*held.costUSD):
		return d.keep(held, zones)
	case fits:
		why := "deadline tight: the cheapest placement that keeps it"
		if tight.od.GPUs() > 0 {
			why += ", on-demand where spot is short"
		}
		return d.request(tight, zones, why)
	}
	last := fastest(cands)
	if last.runtime >= never {
		// Zones that preempt faster than the job can restart price every placement with spot
		// in it as never finishing: on-demand alone, not the first of those (a useless spot GPU).
		last = rushed
	}
	return d.request(last, zones, "deadline at risk: the fastest placement, on-demand where spot is short")
}

// safetyNet moves the job to on-demand alone, for good, once holding the spot there is for
// one more step would leave a preemption that the fastest on-demand placement could not
// recover from in time (recoverable). ods are the on-demand placements it may buy
// (onDemandOptions); the one bought is the cheapest that still fits; once critical the policy
// keeps what it bought.
func (d *deadlineAware) safetyNet(v *View, zones []string, ods []option) (Request, bool) {
	slack := v.Job.Restart + v.Market.Gap
	var cheapest, tight option
	found, fits := false, false
	rushed := fastest(ods)
	for _, o := range ods {
		if o.runtime+slack <= v.TimeLeft() && (!found || o.costUSD < cheapest.costUSD) {
			cheapest, found = o, true
		}
		if o.runtime <= v.TimeLeft() && (!fits || o.costUSD < tight.costUSD) {
			tight, fits = o, true
		}
	}
	if d.critical && v.OnDemand.GPUs() > 0 && v.Spot.GPUs() == 0 {
		return Request{OnDemand: v.OnDemand.GPUs(), Zones: zones, Why: "safety net"}, true
	}
	if d.recoverable(v, fill(Request{Spot: v.Job.MaxGPUs, Zones: zones}, v.Spot, v.Capacity), Placement{}, rushed) {
		return Request{}, false
	}
	d.critical = true
	// The cheapest on-demand placement that keeps the deadline with room for a restart,
	// else the cheapest that keeps it at all (a short job has no room), else the fastest.
	pick := rushed
	if found {
		pick = cheapest
	} else if fits {
		pick = tight
	}
	return d.request(pick, zones, "safety net: a preemption now could not be recovered on spot before the deadline"), true
}

// recoverable reports whether the job can hold spot (beside od on-demand GPUs) for one more
// step: a preemption of all of that spot, now or at the step's end, could still be recovered
// by the fastest on-demand placement (fastest, priced now with its restart) before the
// deadline. At the step's end the job has trained a step on what it holds, at its
// risk-inflated pace (less a restart when that is not what it holds now), so the rushed
// finish is shorter by that progress. A preemption within the step is no worse than one at
// either end (the finish time moves linearly between them); the step ends early for a job
// that finishes within it. Crediting that progress is what lets a job whose deadline has
// little slack start on spot at all: without it the test asked for a restart and a step more
// than the rushed finish takes, and a job at 1.2x its spot-only duration went to on-demand
// from its first step.
func (d *deadlineAware) recoverable(v *View, spot, od Placement, fastest option) bool {
	if fastest.runtime > v.TimeLeft() || fastest.runtime >= never {
		return false
	}
	span, progress := v.Market.Gap, 0.0
	held := spot.Plus(od)
	if pace := v.Pace(held) * (1 + d.risk(v, spot)); spot.GPUs() > 0 && !math.IsInf(pace, 1) {
		pause := time.Duration(0)
		if !equal(spot, v.Spot) || !equal(od, v.OnDemand) || v.Restarting || len(v.Preempted) > 0 {
			// a change, a restart in progress, or survivors of a preemption relaunching
			pause = v.Job.Restart
		}
		// a job that finishes within the step can only be preempted before its end
		span = min(span, pause+seconds(v.Left()*pace))
		progress = min(max((span-pause).Seconds(), 0)/pace, v.Left())
	}
	after := v.Job.Restart + seconds((v.Left()-progress)*v.Pace(fastest.od))
	return span+after <= v.TimeLeft()
}

// onDemandOptions are the on-demand placements of every size up to max_gpus, in whole
// instances, beside the on-demand GPUs held.
func (d *deadlineAware) onDemandOptions(v *View, zones []string) []option {
	var out []option
	step := v.Market.GPUsPerInst
	for total := step; total <= v.Job.MaxGPUs; total += step {
		out = append(out, d.evaluate(v, Placement{}, d.onDemandBeside(v.OnDemand, zones, total)))
	}
	return out
}

// cheapestRecoverable is the cheapest candidate that keeps the deadline without the margin
// and keeps the on-demand fallback (keepsFallback).
func (d *deadlineAware) cheapestRecoverable(v *View, cands []option, rushed option) (option, bool) {
	var best option
	found := false
	for _, o := range cands {
		if (!found || o.costUSD < best.costUSD) && d.keepsFallback(v, o, rushed) {
			best, found = o, true
		}
	}
	return best, found
}

// keepsFallback reports whether holding o keeps the deadline without the margin and, if o
// holds spot, keeps a preemption recoverable by the rushed on-demand finish for the whole
// run: now and after the next step (recoverable), and at its end, with room for the restart
// a preemption just before it would cost. Between those ends the room changes linearly, so
// they are the whole test. A spot placement slower than the rushed finish loses ground on it
// every step: held for one step's test alone, it had the safety net buy max_gpus on-demand
// two steps later.
func (d *deadlineAware) keepsFallback(v *View, o option, rushed option) bool {
	if o.runtime > v.TimeLeft() {
		return false
	}
	if o.spot.GPUs() == 0 {
		return true
	}
	return o.runtime+v.Job.Restart <= v.TimeLeft() && d.recoverable(v, o.spot, o.od, rushed)
}

// switchGain is how much cheaper (over the rest of the run) another placement must be for
// the policy to leave one that still keeps the deadline.
const switchGain = 0.9

// candidates are the placements of every size up to max_gpus, in whole instances: as much
// spot as the zones have, in order (what is held first), and on-demand GPUs beside it for the
// rest. Every choice of a step is made among them, so each is priced once.
func (d *deadlineAware) candidates(v *View, zones []string) []option {
	var out []option
	step := v.Market.GPUsPerInst
	for total := step; total <= v.Job.MaxGPUs; total += step {
		spot := fill(Request{Spot: total, Zones: zones}, v.Spot, v.Capacity)
		out = append(out, d.evaluate(v, spot, d.onDemandBeside(spot, zones, total-spot.GPUs())))
	}
	return out
}

// cheapest is the cheapest candidate whose runtime fits budget: spot alone, or (withOD) spot
// topped up with on-demand GPUs beside it.
func (d *deadlineAware) cheapest(v *View, cands []option, budget time.Duration, withOD bool) (option, bool) {
	var best option
	found := false
	for _, o := range cands {
		if o.od.GPUs() > 0 && !withOD {
			continue
		}
		if o.runtime <= budget && (!found || o.costUSD < best.costUSD) {
			best, found = o, true
		}
	}
	if !found || withOD || v.Deadline <= 0 {
		return best, found
	}
	// On spot alone, time banked now is on-demand time not bought later: the fastest spot
	// placement within speedPremium of the cheapest is taken.
	cheap := best
	for _, o := range cands {
		if o.od.GPUs() == 0 && o.runtime <= budget && o.costUSD <= cheap.costUSD*(1+speedPremium) && o.runtime < best.runtime {
			best = o
		}
	}
	return best, true
}

// speedPremium is how much dearer (over the rest of the run) a faster spot-only placement may
// be than the cheapest one and still be preferred. Banking time on spot is worth paying for:
// every hour ahead of the deadline is an hour less of on-demand GPUs (three times the price)
// if spot runs dry later. 0.3 was chosen on the bundled trace between 0.15 and 0.6, which
// moved the median by under 0.05 of on-demand.
const speedPremium = 0.3

// deferMargin scales the time the fastest on-demand finish would take when the policy
// decides whether an on-demand purchase can wait for spot to come back: 1.4 keeps 40% of that
// finish as room for the preemptions still to come (1.0 bought later and cheaper at the
// median but made the worst tenth of runs pay for a rushed on-demand finish).
const deferMargin = 1.4

// deferral is the fastest spot-only placement (nothing when there is no spot), when holding
// it for one more step still leaves a way to finish on on-demand GPUs: some on-demand
// placement whose run (with deferMargin of room) fits the budget after the step, at a bill the
// job can afford (affordable). Then the on-demand purchase can wait for spot to come back.
func (d *deadlineAware) deferral(v *View, zones []string, budget time.Duration) (option, bool) {
	spot := fill(Request{Spot: v.Job.MaxGPUs, Zones: zones}, v.Spot, v.Capacity)
	o := d.evaluate(v, spot, Placement{})
	progress := 0.0
	if spot.GPUs() > 0 && !math.IsInf(v.Pace(spot), 1) {
		run := v.Market.Gap
		if !equal(spot, v.Spot) || v.OnDemand.GPUs() > 0 {
			run -= v.Job.Restart
		}
		progress = max(run.Seconds(), 0) / v.Pace(spot)
	}
	step := v.Market.GPUsPerInst
	for total := step; total <= v.Job.MaxGPUs; total += step {
		pace := v.Pace(Placement{zones[0]: total})
		if math.IsInf(pace, 1) {
			continue
		}
		after := v.Job.Restart + seconds(math.Max(v.Left()-progress, 0)*pace)
		if v.Market.Gap+time.Duration(float64(after)*deferMargin) <= budget && d.affordable(v, o, total, after) {
			return o, true
		}
	}
	return o, false
}

// affordable reports whether deferring one more step on spot (o) and then, if spot does not
// come back, finishing on gpus on-demand GPUs for after keeps the job's whole bill within its
// best on-demand plan's. Waiting until only the fastest placement still keeps the deadline
// trades the efficient placement a purchase now would get for that fast, dearer one; on a
// market whose spot seldom returns (zones of one machine each) that trade put the 90th
// percentile above the all-on-demand cost (1.06×). The rushed finish is billed as the baseline
// is, from running: its machines' boot (part of after) is not billed, as the clouds and the
// simulator do not bill it. Without what the job spent (a controller that does not say) there
// is nothing to compare and any placement that fits will do.
func (d *deadlineAware) affordable(v *View, o option, gpus int, after time.Duration) bool {
	if v.Baseline.GPUs <= 0 || v.SpentUSD <= 0 {
		return true
	}
	perGPU := v.Market.OnDemandPrice / float64(v.Market.GPUsPerInst)
	step := 0.0
	if o.runtime > 0 && o.runtime < never {
		step = o.costUSD / o.runtime.Hours() * v.Market.Gap.Hours()
	}
	return v.SpentUSD+step+float64(gpus)*perGPU*max(after-v.Job.Boot, 0).Hours() <= v.Baseline.CostUSD
}

// fastest is the candidate that finishes first (max_gpus, usually, with as much spot as
// there is and on-demand for the rest).
func fastest(cands []option) option {
	var best option
	for _, o := range cands {
		if best.runtime == 0 || o.runtime < best.runtime {
			best = o
		}
	}
	return best
}

// onDemandBeside places od on-demand GPUs in the zone with the most spot GPUs (fast links).
func (d *deadlineAware) onDemandBeside(spot Placement, zones []string, od int) Placement {
	if od <= 0 {
		return Placement{}
	}
	zone, most := zones[0], 0
	for _, z := range zones {
		if spot[z] > most {
			zone, most = z, spot[z]
		}
	}
	return Placement{zone: od}
}

// evaluate prices holding spot and od for the rest of the job: the runtime (its spot part
// inflated by the zones' preemption risk, and a restart unless it is what the job holds) and
// what it costs.
func (d *deadlineAware) evaluate(v *View, spot, od Placement) option {
	o := option{spot: spot, od: od}
	pace := v.Pace(spot.Plus(od))
	if math.IsInf(pace, 1) {
		o.runtime, o.costUSD = never, math.Inf(1)
		return o
	}
	run := v.Left() * pace * (1 + d.risk(v, spot))
	o.runtime = seconds(run)
	if !equal(spot, v.Spot) || !equal(od, v.OnDemand) || v.Restarting {
		o.runtime += v.Job.Restart // a change stops training for a restart
	}
	perHour := 0.0
	for z, g := range spot {
		perHour += float64(g) / float64(v.Market.GPUsPerInst) * v.Market.SpotPrice[z]
	}
	perHour += float64(od.GPUs()) / float64(v.Market.GPUsPerInst) * v.Market.OnDemandPrice
	o.costUSD = perHour * o.runtime.Hours()
	for z := range od {
		o.odZone = z
	}
	return o
}

// risk is the expected share of time lost on a spot placement: 2% for every preemption its
// zones had in the last day, up to 30%, or, where its zones preempt faster than that allows
// for, the share of the time their restarts take at the rate the job has seen (restartShare).
// A preemption is a zone taking GPUs at a step, however many: the job restarts once either
// way, and counting GPUs made a job of eight inflate its spot runtimes eight times as much as
// a job of one for the same event.
func (d *deadlineAware) risk(v *View, spot Placement) float64 {
	n := 0
	for _, e := range d.preemptions {
		if spot[e.Zone] > 0 && v.Elapsed-e.At < riskWindow {
			n++
		}
	}
	return max(math.Min(0.02*float64(n), 0.3), restartShare(n, v.Elapsed, v.Job.Restart))
}

// rateWindowFloor is the least time a preemption rate is measured over: a young job's first
// preemptions count as if over this long, so one early event does not read as a storm. 3 h
// was chosen among 1, 2, 3 and 6 h on the random markets of random_markets_test.go (worst run
// 1.35, 1.34, 1.34 and 1.43x its best on-demand plan; 17 of 500 above 1.1x at 1-3 h) and the
// bench's cases (1 and 2 h moved the bundled 6000-iteration job's median at 1.2x from 0.36 to
// 0.38 and 0.37; 3 and 6 h left the bundled cases as they were).
const rateWindowFloor = 3 * time.Hour

// restartShare is how much longer a run takes when its zones preempt it n times over the
// window the job has seen (its elapsed time, at most riskWindow and at least
// rateWindowFloor) and each costs two restarts (onto
// the replacement, and back to spot when it returns): at a rate of λ preemptions an hour and
// restarts of R hours, a 2λR share of every hour goes to restarts, so the run takes
// 1/(1-2λR) as long; +Inf once restarts would take all the time. A
// zone whose spot comes and goes every few minutes made the 30% cap price spot as if it held:
// on random markets of that kind the policy went back to spot at every return, restarted
// hundreds of times and paid up to 1.6x its best on-demand plan.
func restartShare(n int, elapsed, restart time.Duration) float64 {
	if n == 0 {
		return 0
	}
	window := min(max(elapsed, rateWindowFloor), riskWindow)
	lost := 2 * float64(n) * restart.Hours() / window.Hours()
	if lost >= 1 {
		return math.Inf(1)
	}
	return lost / (1 - lost)
}

// order ranks the zones: fewest preemptions in the last day, then cheapest, then most
// capacity now.
func (d *deadlineAware) order(v *View) []string {
	recent := map[string]int{}
	for _, e := range d.preemptions {
		if v.Elapsed-e.At < riskWindow {
			recent[e.Zone]++
		}
	}
	zones := byCapacity(v)
	sort.SliceStable(zones, func(i, j int) bool { return recent[zones[i]] < recent[zones[j]] })
	return zones
}

// keep asks for what is held, saying why where on-demand GPUs are among it.
func (d *deadlineAware) keep(held option, zones []string) Request {
	why := ""
	if held.od.GPUs() > 0 {
		why = "keeping the on-demand GPUs the deadline needed"
	}
	return d.request(held, zones, why)
}

func (d *deadlineAware) request(o option, zones []string, why string) Request {
	return Request{Spot: o.spot.GPUs(), Zones: zones, OnDemand: o.od.GPUs(), OnDemandZone: o.odZone, Why: why}
}
