package trainingwf

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/policy"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workflows/internal/jobwf"
)

// maxTimeline bounds the timeline kept in the job's state (and so in its query answers and
// continue-as-new input: 500 points are about 100 KB of JSON).
const maxTimeline = 500

// job is one TrainingJob run's state. Everything a decision reads is here and changes only
// in workflow code, so replay rebuilds it exactly.
type job struct {
	in   training.JobInput
	opts training.JobOptions
	spec training.Spec
	id   string
	// scale is the provider's time scale (resolved by admit).
	scale cloud.TimeScale
	// limits are the control plane's (admit reads them).
	limits training.Limits
	// memoStatus: publish keeps the status in the memo too (runs recorded before did not).
	memoStatus bool
	// strategy holds the spot decisions: short offerings, avoided zones, on-demand or not.
	strategy training.SpotStrategy

	status  training.JobStatus
	held    []cloud.Instance // in acquisition order
	odPrice map[string]float64
	// noticed are held instances their provider has announced it will take back: a replan
	// does not keep them (they would force another replan moments later).
	noticed map[string]bool
	// meterFromBoot: the held machines' states are followed, and accrue skips those booting.
	meterFromBoot bool
	// meterSkipsGone: accrue also skips a held machine the provider said is gone (until the
	// job drops it, after stopping the epoch's trainers).
	meterSkipsGone bool

	// The running plan.
	plan        *training.PlanJobResult
	placement   []training.RankPlacement
	modelLayers int

	// The running epoch.
	trainers    []*trainerRun
	cancelEpoch workflow.CancelFunc
	rankIter    map[int]int64
	savers      map[int]bool
	// warm are the instances whose node agent ran a trainer of this job (it reported).
	warm        map[string]bool
	lastCounted int64

	// Requests from update handlers, acted on by the main loop.
	wake            workflow.Channel
	replanReason    string
	pauseRequested  bool
	pauseFrom       int64
	pauseAt         time.Time
	resumeRequested bool
	finished        bool

	// allOffers are the offerings the last listing returned, every one the spec allows.
	allOffers []cloud.Offering
	// droughtSince is when the current run of rounds without a plan began.
	droughtSince time.Time

	// scaleUp is the acquisition for a better plan on returned capacity, while the running
	// plan trains on (scaleup.go); lastScaleCheck is when the job last looked, scaleUps how
	// many acquisitions it started.
	scaleUp        *scaleUpProbe
	lastScaleCheck time.Time
	scaleUps       int

	// The deadline policy (policy.go): whether this run asked its version and uses it, what
	// the policy remembers, its last decision (whose caps plans keep to), when it was made,
	// and the spot GPUs lost per zone since.
	policyAsked, policyOn bool
	policyMem             policy.DeadlineMemory
	policyReq             *training.SpotDecision
	lastDecision          time.Time
	lostSince             map[string]int

	// baselineAsked: this run asked for the job's best on-demand cost (baseline.go).
	baselineAsked bool

	meter        jobwf.Meter
	events       int
	trainerFails int
	pub          jobwf.Publisher
}

// newJob builds the state of a fresh start or of a run continued as new.
func newJob(ctx workflow.Context, in training.JobInput) *job {
	j := &job{in: in, opts: in.Options.WithDefaults(), spec: in.Spec, id: workflow.GetInfo(ctx).WorkflowExecution.ID,
		odPrice: map[string]float64{}, noticed: map[string]bool{}, warm: map[string]bool{}, wake: workflow.NewBufferedChannel(ctx, 64)}
	j.strategy = training.SpotStrategy{Policy: in.Spec.Spot, UnavailableTTL: j.opts.UnavailableTTL, AvoidZoneTTL: j.opts.AvoidZoneTTL}
	now := workflow.Now(ctx)
	j.meter.Last = now
	j.status = training.JobStatus{JobID: j.id, Name: in.Spec.Name, Phase: training.PhasePlanning, Iterations: in.Spec.Iterations,
		LastCheckpoint: -1, Budget: in.Spec.Budget, StartedAt: now, UpdatedAt: now, GPUs: map[string]int{}}
	j.lastCounted = -1
	if workflow.GetVersion(ctx, versionMeterFromStart, workflow.DefaultVersion, 1) == 1 {
		j.meterFromBoot, j.meterSkipsGone = true, true
	}
	if c := in.Carried; c != nil {
		j.status = c.Status
		j.status.JobID = j.id
		j.held = append(j.held, c.Instances...)
		maps.Copy(j.odPrice, c.OnDemandPrices)
		j.strategy.Unavailable, j.strategy.Avoided = c.Unavailable, c.Avoided
		j.placement, j.modelLayers, j.strategy.SpotIterSeconds = c.Placement, c.ModelLayers, c.SpotOnlyIterSeconds
		if n := len(j.status.Plans); n > 0 && len(j.placement) > 0 {
			last := j.status.Plans[n-1]
			j.plan = &training.PlanJobResult{Plan: last.Plan, Estimate: last.Estimate, Summary: last.Summary, ModelLayers: c.ModelLayers}
			j.strategy.OnDemand = j.usesOnDemand()
		}
		j.spec.Budget = j.status.Budget
		j.lastCounted = j.status.LastCheckpoint
		j.policyMem, j.policyReq = c.PolicyMemory, c.PolicyDecision
	}
	return j
}

// accrue adds the cost of holding the instances since the last event: price × simulated
// hours, the same holding at on-demand prices (HoldingOnDemandCostUSD; the job's savings are
// measured against its best on-demand plan instead, baseline.go), and their GPU-hours. Once
// the job follows its machines' states (noteStates), one still booting is not counted: providers bill from
// boot, and counting from the acquisition put the job's cost 4–11% above the simulated
// market's bill. Nor, since meterSkipsGone, is one the provider said is gone: a confirmed loss
// stays held while the epoch's other trainers are stopped (seconds of wall time, minutes of
// simulated time at 60x), and counting it there put the job 9% above the bill on the bundled
// trace's 178 h start, where a zone is lost four machines at a time.
func (j *job) accrue(now time.Time) {
	held := j.held
	if j.meterFromBoot {
		held = jobwf.Billed(j.held, j.meterSkipsGone)
	}
	hours := j.meter.Accrue(now, j.scale, held, j.odPrice, &j.status.CostUSD, &j.status.HoldingOnDemandCostUSD)
	for _, in := range held {
		j.status.GPUHours += float64(in.GPUs) * hours
	}
}

// versionMeterFromBoot: the held machines' states follow every describe, and the cost meter
// skips machines still booting; runs recorded before counted them from the acquisition.
const versionMeterFromBoot = "meter-from-boot"

// versionMeterFromStart: the meter follows the held machines' states from the run's start;
// runs recorded before began at their first describe, so the first epoch's machines, bought
// booting, were counted from their acquisition until then (the demo's job 1.5% over the
// market's bill: each of the four machines of its first epoch one simulated minute).
const versionMeterFromStart = "meter-from-start"

// versionMeterSkipsGone: the meter stops counting a held machine once a describe says it is
// gone; runs recorded before counted it until the job dropped it.
const versionMeterSkipsGone = "meter-skips-gone"

// noteStates takes the states, and the prices, a describe gave for the held machines (a
// machine's state and price are otherwise the ones it had when it was acquired).
func (j *job) noteStates(ctx workflow.Context, got []cloud.Instance) {
	if workflow.GetVersion(ctx, versionMeterFromBoot, workflow.DefaultVersion, 1) != 1 {
		return
	}
	j.accrue(workflow.Now(ctx)) // what was held until now, at the states and prices it had
	j.meterFromBoot = true
	j.meterSkipsGone = workflow.GetVersion(ctx, versionMeterSkipsGone, workflow.DefaultVersion, 1) == 1
	jobwf.TakeDescribedStates(j.held, got)
	if workflow.GetVersion(ctx, jobwf.VersionMeterCurrentPrice, workflow.DefaultVersion, 1) == 1 {
		jobwf.TakeDescribedPrices(j.held, got)
	}
}

// refresh recomputes the derived fields of the status from the held instances.
func (j *job) refresh(now time.Time) {
	j.status.GPUs = map[string]int{}
	j.status.USDPerHour = 0
	zones := map[string]bool{}
	j.status.Instances = j.status.Instances[:0]
	for _, in := range j.held {
		j.status.GPUs[gpuKey(in)] += in.GPUs
		j.status.USDPerHour += in.PricePerHour
		zones[in.Zone] = true
		j.status.Instances = append(j.status.Instances, in.ID)
	}
	j.status.Zones = j.status.Zones[:0]
	//workflowcheck:ignore the result is sorted right below
	for z := range zones {
		j.status.Zones = append(j.status.Zones, z)
	}
	sort.Strings(j.status.Zones)
	j.status.UpdatedAt = now
}

// gpuKey is "provider/zone/gpu(capacity)", the key of training.JobStatus.GPUs.
func gpuKey(in cloud.Instance) string {
	return fmt.Sprintf("%s/%s/%s(%s)", in.Provider, in.Zone, in.GPUType, in.Capacity)
}

// totalGPUs is the number of GPUs held.
func (j *job) totalGPUs() int {
	n := 0
	for _, in := range j.held {
		n += in.GPUs
	}
	return n
}

// event accounts for time passing, samples the timeline and tells the UI.
func (j *job) event(ctx workflow.Context, name string) {
	now := workflow.Now(ctx)
	j.accrue(now)
	j.refresh(now)
	j.events++
	gpus := maps.Clone(j.status.GPUs)
	j.status.Timeline = append(j.status.Timeline, training.TimelinePoint{At: now, Iteration: j.status.Iteration,
		CostUSD: j.status.CostUSD, GPUHours: j.status.GPUHours, GPUs: gpus, Event: name})
	if len(j.status.Timeline) > maxTimeline {
		if workflow.GetVersion(ctx, versionTimelineKeepsHoldings, workflow.DefaultVersion, 1) == 1 {
			j.status.Timeline = thinKeepingHoldings(j.status.Timeline, maxTimeline)
		} else {
			j.status.Timeline = thin(j.status.Timeline)
		}
	}
	j.publish(ctx)
}

// versionTimelineKeepsHoldings: thinning the timeline keeps every point where the held GPUs
// changed while it can, and never cuts the oldest points (thinKeepingHoldings); runs
// recorded before halved the older half whatever it held and kept only the newest points,
// so a long job's timeline no longer accounted for the GPUs it had held.
const versionTimelineKeepsHoldings = "timeline-keeps-holdings"

// thinKeepingHoldings shortens a timeline just over limit points to at most limit. It keeps
// the first point and the newer half, and drops from the rest in rounds that stop once the
// timeline fits: every other progress sample that changed no holding (its GPUs are the
// point's before, so the GPUs drawn over time are unchanged), then every other point of any
// event that changed none, and only when holding changes alone overflow the bound, every
// other point whatever it is. Each point carries the running cost and GPU-hours, so the
// totals, and those between any two points kept, stay exact whatever is dropped.
func thinKeepingHoldings(ps []training.TimelinePoint, limit int) []training.TimelinePoint {
	rounds := []func(prev, p training.TimelinePoint) bool{
		func(prev, p training.TimelinePoint) bool {
			return (p.Event == "" || p.Event == "progress") && sameGPUs(prev.GPUs, p.GPUs)
		},
		func(prev, p training.TimelinePoint) bool { return sameGPUs(prev.GPUs, p.GPUs) },
		func(prev, p training.TimelinePoint) bool { return true },
	}
	for _, droppable := range rounds {
		if len(ps) <= limit {
			break
		}
		ps = dropEveryOther(ps, droppable)
	}
	return ps
}

// sameGPUs tells whether two samples show the same GPUs held.
func sameGPUs(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	//workflowcheck:ignore the answer does not depend on the order
	for k, n := range a {
		if m, ok := b[k]; !ok || m != n {
			return false
		}
	}
	return true
}

// dropEveryOther drops every other point of the older half (the first point aside) that
// droppable allows, given the point before it.
func dropEveryOther(ps []training.TimelinePoint, droppable func(prev, p training.TimelinePoint) bool) []training.TimelinePoint {
	half := len(ps) / 2
	out := make([]training.TimelinePoint, 0, len(ps))
	out = append(out, ps[0])
	seen := 0 // droppable points so far
	for i := 1; i < half; i++ {
		if droppable(ps[i-1], ps[i]) {
			seen++
			if seen%2 == 1 {
				continue // the first, third, ... go
			}
		}
		out = append(out, ps[i])
	}
	return append(out, ps[half:]...)
}

// thin halves the older half of the timeline, keeping named events over plain samples
// where it can and always the newest points (runs before versionTimelineKeepsHoldings).
func thin(ps []training.TimelinePoint) []training.TimelinePoint {
	half := len(ps) / 2
	out := make([]training.TimelinePoint, 0, len(ps))
	for i := 0; i < half; i++ {
		if i%2 == 0 || (ps[i].Event != "" && ps[i].Event != "progress") {
			out = append(out, ps[i])
		}
	}
	out = append(out, ps[half:]...)
	if len(out) > maxTimeline {
		out = out[len(out)-maxTimeline:]
	}
	return out
}

// setPhase changes the phase and records it as an event.
func (j *job) setPhase(ctx workflow.Context, phase string) {
	if j.status.Phase == phase {
		return
	}
	j.status.Phase = phase
	j.event(ctx, "phase "+phase)
}

// story is the workflow's current details in the UI: what the job is doing and has been
// through, in a few lines.
func (j *job) story() string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** (%s) — %s, iteration %d/%d", j.spec.Name, j.spec.Model.Name, j.status.Phase, j.status.Iteration, j.status.Iterations)
	fmt.Fprintf(&b, "\n\n%d GPUs in %s, $%.2f/h, $%.2f so far", j.totalGPUs(),
		strings.Join(j.status.Zones, ", "), j.status.USDPerHour, j.status.CostUSD)
	if j.status.BestOnDemandCostUSD > 0 {
		fmt.Fprintf(&b, " (the whole job on its best on-demand plan: $%.2f; the same machines on demand so far: $%.2f)",
			j.status.BestOnDemandCostUSD, j.status.HoldingOnDemandCostUSD)
	} else {
		fmt.Fprintf(&b, " (the same machines on demand: $%.2f)", j.status.HoldingOnDemandCostUSD)
	}
	fmt.Fprintf(&b, "\n\nplan epoch %d, %d replans, %d preemptions survived, %d notices, checkpoint %d (%d committed, %d restores)",
		j.status.Epoch, j.status.Replans, j.status.Preemptions, j.status.Notices, j.status.LastCheckpoint,
		j.status.CheckpointsCommitted, j.status.Restores)
	if n := len(j.status.Plans); n > 0 {
		p := j.status.Plans[n-1]
		fmt.Fprintf(&b, "\n\ncurrent plan (%s): %s", p.Reason, p.Summary)
	}
	if j.status.Error != "" {
		fmt.Fprintf(&b, "\n\nerror: %s", j.status.Error)
	}
	return b.String()
}
