package report

import (
	"strings"
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
)

// Summary is the end-of-job account: what `schooner demo --json` prints as one object and
// the Markdown report's first table. Times are wall seconds unless the name says simulated.
type Summary struct {
	JobID                string  `json:"job_id"`
	Status               string  `json:"status"`
	Iterations           int64   `json:"iterations"`
	IterationsTotal      int64   `json:"iterations_total"`
	Preemptions          int     `json:"preemptions"`
	Notices              int     `json:"notices"`
	InjectedPreemptions  int     `json:"injected_preemptions"`
	Replans              int     `json:"replans"`
	DistinctPlans        int     `json:"distinct_plans"`
	CheckpointsCommitted int     `json:"checkpoints_committed"`
	Restores             int     `json:"restores"`
	LostIterations       int64   `json:"lost_iterations"`
	CostUSD              float64 `json:"cost_usd"`
	// BilledUSD is what the provider billed for the job's instances, counted by the provider
	// (the simulated market) rather than by the job; CostUSD is the job's own accounting,
	// which should agree. Zero when not known.
	BilledUSD float64 `json:"billed_usd,omitempty"`
	// GPUHours are the GPU-hours the job's meter counted (provider hours, as CostUSD): the
	// running total the timeline's last point carries too.
	GPUHours float64 `json:"gpu_hours,omitempty"`
	// BestOnDemandCostUSD is what the job costs run start to end on its best on-demand plan
	// over the same offerings (no preemption, nothing redone), BestOnDemandPlan that plan
	// (training.JobStatus.BestOnDemandCostUSD): what a user would otherwise pay, the baseline
	// of SavingsPct. Zero when not known.
	BestOnDemandCostUSD float64 `json:"best_on_demand_cost_usd,omitempty"`
	BestOnDemandPlan    string  `json:"best_on_demand_plan,omitempty"`
	// SavingsPct is how much less than its baseline the job cost, in per cent of the
	// baseline, and SavingsBaseline names the baseline: "best_on_demand" (the job on its best
	// on-demand plan) whenever that is known, else "holding_on_demand" (the same machines at
	// on-demand prices, as savings_pct meant before the best on-demand plan was its baseline).
	SavingsPct      float64 `json:"savings_pct"`
	SavingsBaseline string  `json:"savings_baseline,omitempty"`
	// SavingsVsBestOnDemandPct is SavingsPct against the best on-demand plan alone (zero when
	// that is not known). Deprecated: read savings_pct with savings_baseline.
	SavingsVsBestOnDemandPct float64 `json:"savings_vs_best_on_demand_pct,omitempty"`
	// HoldingOnDemandCostUSD prices the machines the spot run held, for as long as it held
	// them, at on-demand prices (idle, recovery and redone time included, so it flatters
	// spot); SavingsVsHoldingPct is the job's cost against it. A secondary comparison.
	HoldingOnDemandCostUSD float64 `json:"holding_on_demand_cost_usd"`
	SavingsVsHoldingPct    float64 `json:"savings_vs_holding_pct"`
	// OnDemandCostUSD is HoldingOnDemandCostUSD under its name from before. Deprecated: read
	// holding_on_demand_cost_usd, or best_on_demand_cost_usd for the baseline.
	OnDemandCostUSD float64 `json:"on_demand_cost_usd"`
	// Goodput is the share of computed iterations that counted (not redone after a restore).
	Goodput float64 `json:"goodput"`
	// RecoverySeconds is the wall time from each preemption to training again, summed.
	RecoverySeconds float64 `json:"recovery_seconds"`
	// LostSimSeconds is the simulated time lost to preemptions: recovery plus redone work.
	LostSimSeconds  float64 `json:"lost_sim_seconds"`
	LeakedInstances int     `json:"leaked_instances"`
	StateVerified   bool    `json:"state_verified"`
	VerifyError     string  `json:"verify_error,omitempty"`
	WallSeconds     float64 `json:"wall_seconds"`
	TimeScale       float64 `json:"time_scale"`
	Error           string  `json:"error,omitempty"`
	Plans           []Plan  `json:"plans"`
	// OnDemandPurchases are the deadline policy's purchases of on-demand GPUs, with why.
	OnDemandPurchases []training.OnDemandPurchase `json:"on_demand_purchases,omitempty"`
}

// The baselines Summary.SavingsBaseline names.
const (
	BaselineBestOnDemand = "best_on_demand"
	BaselineHolding      = "holding_on_demand"
)

// Plan is one line of the plan history.
type Plan struct {
	Epoch       int       `json:"epoch"`
	At          time.Time `json:"at"`
	Reason      string    `json:"reason"`
	Summary     string    `json:"summary"`
	GPUs        int       `json:"gpus"`
	FromStep    int64     `json:"from_step"`
	IterSeconds float64   `json:"iter_seconds"`
	USDPerHour  float64   `json:"usd_per_hour"`
}

// Facts are what the caller knows beyond the job's status: leaks are counted from the
// provider after the job ended, state verification may be repeated outside the workflow.
type Facts struct {
	Wall                time.Duration
	TimeScale           float64
	LeakedInstances     int
	StateVerified       bool
	VerifyError         string
	InjectedPreemptions int
	// BilledUSD is what the provider billed for the job's instances (0: not known).
	BilledUSD float64
}

// Summarize builds the summary of a job from its final status.
func Summarize(st training.JobStatus, f Facts) Summary {
	s := Summary{
		JobID: st.JobID, Status: st.Phase, Iterations: st.Iteration, IterationsTotal: st.Iterations,
		Preemptions: st.Preemptions, Notices: st.Notices, InjectedPreemptions: f.InjectedPreemptions,
		Replans: st.Replans, CheckpointsCommitted: st.CheckpointsCommitted, Restores: st.Restores,
		LostIterations: st.LostIterations, CostUSD: round(st.CostUSD, 4), BilledUSD: round(f.BilledUSD, 4),
		HoldingOnDemandCostUSD: round(st.HoldingOnDemandCostUSD, 4), OnDemandCostUSD: round(st.HoldingOnDemandCostUSD, 4),
		GPUHours:        round(gpuHours(st), 4),
		LeakedInstances: f.LeakedInstances, StateVerified: f.StateVerified, VerifyError: f.VerifyError,
		WallSeconds: round(f.Wall.Seconds(), 2), TimeScale: f.TimeScale, Error: st.Error,
	}
	if st.HoldingOnDemandCostUSD > 0 {
		s.SavingsVsHoldingPct = round(100*(1-st.CostUSD/st.HoldingOnDemandCostUSD), 1)
		s.SavingsPct, s.SavingsBaseline = s.SavingsVsHoldingPct, BaselineHolding
	}
	if pct, ok := st.SavingsPct(); ok {
		s.BestOnDemandCostUSD, s.BestOnDemandPlan = round(st.BestOnDemandCostUSD, 4), st.BestOnDemandPlan
		s.SavingsVsBestOnDemandPct = round(pct, 1)
		s.SavingsPct, s.SavingsBaseline = s.SavingsVsBestOnDemandPct, BaselineBestOnDemand
	}
	if done := st.Iteration + st.LostIterations; done > 0 {
		s.Goodput = round(float64(st.Iteration)/float64(done), 4)
	}
	shapes := map[string]bool{}
	for _, p := range st.Plans {
		s.Plans = append(s.Plans, Plan{
			Epoch: p.Epoch, At: p.At, Reason: p.Reason, Summary: p.Summary, GPUs: planGPUs(p),
			FromStep: p.FromStep, IterSeconds: round(p.Estimate.IterTime, 4), USDPerHour: round(p.Estimate.USDPerHour, 4),
		})
		shapes[shapeOf(p)] = true
	}
	s.DistinctPlans = len(shapes)
	s.OnDemandPurchases = st.OnDemandPurchases
	recovery := recoverySeconds(st)
	s.RecoverySeconds = round(recovery, 2)
	recoverySim := cloud.TimeScale(f.TimeScale).Sim(time.Duration(recovery * float64(time.Second))).Seconds()
	s.LostSimSeconds = round(recoverySim+float64(st.LostIterations)*meanIterSeconds(st), 1)
	return s
}

// gpuHours are the job's GPU-hours: the meter's total, or for a status without one the
// running total its timeline's last point carries (zero for jobs recorded before either).
func gpuHours(st training.JobStatus) float64 {
	if st.GPUHours > 0 || len(st.Timeline) == 0 {
		return st.GPUHours
	}
	return st.Timeline[len(st.Timeline)-1].GPUHours
}

// planGPUs counts the GPUs of a plan.
func planGPUs(p training.PlanRecord) int {
	n := 0
	for _, st := range p.Plan.Stages {
		for _, r := range st.Replicas {
			n += r.TP
		}
	}
	return n
}

// shapeOf names a plan by its layout (stages, replicas and where they run), so the summary
// can tell a replan to the same plan from one to a different plan.
func shapeOf(p training.PlanRecord) string {
	var b strings.Builder
	for _, st := range p.Plan.Stages {
		b.WriteString("[")
		for _, r := range st.Replicas {
			b.WriteString(string(r.GPU) + "@" + r.Zone + ";")
		}
		b.WriteString("]")
	}
	return b.String()
}

// recoverySeconds sums, for every replan after the first plan that was caused by a
// preemption, the wall time from the preemption event before it to the first sample that
// shows training progressing past the step it restored from.
func recoverySeconds(st training.JobStatus) float64 {
	total := 0.0
	for _, p := range st.Plans {
		if p.Reason != "preemption" {
			continue
		}
		var from time.Time
		for _, pt := range st.Timeline {
			if pt.At.After(p.At) {
				break
			}
			if strings.Contains(strings.ToLower(pt.Event), "preempt") {
				from = pt.At
			}
		}
		if from.IsZero() {
			from = p.At
		}
		to := p.At
		for _, pt := range st.Timeline {
			if pt.At.After(p.At) && pt.Iteration > p.FromStep {
				to = pt.At
				break
			}
		}
		total += to.Sub(from).Seconds()
	}
	return total
}

// meanIterSeconds is the mean predicted iteration time of the plans, simulated seconds.
func meanIterSeconds(st training.JobStatus) float64 {
	sum, n := 0.0, 0
	for _, p := range st.Plans {
		if p.Estimate.IterTime > 0 {
			sum += p.Estimate.IterTime
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func round(x float64, digits int) float64 {
	p := 1.0
	for i := 0; i < digits; i++ {
		p *= 10
	}
	if x < 0 {
		return -float64(int64(-x*p+0.5)) / p
	}
	return float64(int64(x*p+0.5)) / p
}

// AccountingOverBillPct is how far the job's own cost accounting lies above (+) or below (−)
// what the provider billed, in percent; 0 when nothing was billed.
func (s Summary) AccountingOverBillPct() float64 {
	if s.BilledUSD <= 0 {
		return 0
	}
	return 100 * (s.CostUSD/s.BilledUSD - 1)
}
