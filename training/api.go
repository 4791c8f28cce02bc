// The contract of a TrainingJob, without Temporal: its type name, inputs, phases, the names
// and payloads of its signals, updates and query, and the status it answers with. The
// workflow (workflows/trainingwf), its activities (activities/trainingact), the node agents and
// every client (the CLI, the benchmarks, the plain temporal CLI's JSON) speak only these.

package training

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/policy"
)

// WorkflowTrainingJob is the TrainingJob workflow's type name; a job's workflow id is its job id.
const WorkflowTrainingJob = "TrainingJob"

// Messages of a TrainingJob: what the CLI, the node agents and the plain temporal CLI send.
const (
	SignalPreemptionNotice    = fleet.SignalPreemptionNotice
	SignalProgress            = "progress"
	SignalCheckpointCommitted = "checkpoint-committed"
	UpdateSetBudget           = "set-budget"
	UpdateResize              = "resize"
	UpdatePause               = "pause"
	UpdateResume              = "resume"
	QueryStatus               = "status"
)

// Job phases, as SchoonerPhase shows them.
const (
	PhasePlanning   = "planning"
	PhaseAcquiring  = "acquiring"
	PhaseTraining   = "training"
	PhaseRecovering = "recovering"
	// PhaseWaiting: no plan fits what is on offer now; the job retries after a wait (spot
	// capacity comes back) and, under a deadline, buys on-demand capacity when waiting longer
	// would miss it.
	PhaseWaiting   = "waiting"
	PhasePaused    = "paused"
	PhaseReleasing = "releasing"
	PhaseCompleted = "completed"
	PhaseFailed    = "failed"
	PhaseCancelled = "cancelled"
)

// JobInput starts a job. Carried (nil on a fresh start) is the state handed over by
// continue-as-new.
type JobInput struct {
	Spec Spec `json:"spec"`
	// TimeScale is ignored: the job asks its provider (a real cloud's is 1, the simulated
	// market's its --time-scale), so a user cannot get it wrong. It is read only when
	// replaying histories recorded before the job asked.
	TimeScale   float64     `json:"time_scale,omitempty"`
	SubmittedAt time.Time   `json:"submitted_at"`
	Carried     *CarryState `json:"carried,omitempty"`
	// Options tunes the control loop; zero fields take the defaults of JobOptions.
	Options JobOptions `json:"options,omitempty"`
}

// CarryState is everything a job needs to go on after continue-as-new: the job's
// accounting and the instances it holds.
type CarryState struct {
	Status    JobStatus        `json:"status"`
	Instances []cloud.Instance `json:"instances"`
	// OnDemandPrices are the on-demand prices of the held instances by id, for the
	// on-demand comparison.
	OnDemandPrices map[string]float64 `json:"on_demand_prices,omitempty"`
	// Unavailable and Avoided are the steering caches with their expiry in workflow time.
	Unavailable cloud.ExpirySet `json:"unavailable,omitempty"`
	Avoided     cloud.ExpirySet `json:"avoided,omitempty"`
	// Placement is the running plan's rank → instance map, so the next run relaunches the
	// same plan without planning again.
	Placement []RankPlacement `json:"placement,omitempty"`
	// ModelLayers of the running plan.
	ModelLayers int `json:"model_layers,omitempty"`
	// SpotOnlyIterSeconds is the iteration time of the last spot-only plan (deadline check).
	SpotOnlyIterSeconds float64 `json:"spot_only_iter_seconds,omitempty"`
	// TimeScale is the provider's, as the first run asked it.
	TimeScale cloud.TimeScale `json:"time_scale,omitempty"`
	// PolicyMemory and PolicyDecision are the deadline policy's memory and its last decision
	// (whose caps the running plan keeps to).
	PolicyMemory   policy.DeadlineMemory `json:"policy_memory,omitempty"`
	PolicyDecision *SpotDecision         `json:"policy_decision,omitempty"`
}

// RankPlacement is the instance a rank of the running plan runs on.
type RankPlacement struct {
	Rank       int    `json:"rank"`
	Stage      int    `json:"stage"`
	Replica    int    `json:"replica"`
	InstanceID string `json:"instance_id"`
}

// PreemptionNotice tells the job an instance will be reclaimed or is gone (fleet's, the
// same for every kind of workflow).
type PreemptionNotice = fleet.PreemptionNotice

// CheckpointCommitted says a checkpoint step is durable in the job's remote store (every
// stage's shard is there). Saver ranks report it; the job still reads the latest durable step
// from the store before acting, and uses this only to keep its status current.
type CheckpointCommitted struct {
	Epoch int   `json:"epoch"`
	Rank  int   `json:"rank"`
	Step  int64 `json:"step"`
	// Emergency marks a step saved on a preemption notice, off the regular cadence.
	Emergency bool `json:"emergency,omitempty"`
}

// SetBudgetRequest changes the budget; zero fields remove that cap.
type SetBudgetRequest struct {
	Budget Budget `json:"budget"`
}

// ResizeRequest bounds the GPUs the job may hold (MaxGPUs 0: no bound); the job replans.
type ResizeRequest struct {
	MaxGPUs int `json:"max_gpus"`
}

// PlanRecord is one entry of a job's plan history.
type PlanRecord struct {
	Epoch     int              `json:"epoch"`
	At        time.Time        `json:"at"`
	Reason    string           `json:"reason"` // "initial", "preemption", "capacity", "deadline", "resize", "budget", "resume"
	Summary   string           `json:"summary"`
	Plan      planner.Plan     `json:"plan"`
	Estimate  planner.Estimate `json:"estimate"`
	Instances []string         `json:"instances"`
	FromStep  int64            `json:"from_step"`
}

// JobStatus is what the status query returns and the job's result ends with.
type JobStatus struct {
	JobID      string `json:"job_id"`
	Name       string `json:"name"`
	Phase      string `json:"phase"`
	Iteration  int64  `json:"iteration"`
	Iterations int64  `json:"iterations"`
	// GPUs by "provider/zone/gpu(capacity)" held now.
	GPUs map[string]int `json:"gpus"`
	// CostUSD so far; USDPerHour at the current holding.
	CostUSD    float64 `json:"cost_usd"`
	USDPerHour float64 `json:"usd_per_hour"`
	// BestOnDemandCostUSD is the whole job run start to end on its best on-demand plan (the
	// plan the job's planning finds over its offerings at its first plan with spot left out,
	// at on-demand prices, nothing lost): what a user who never touches spot would pay, and
	// the baseline of the job's savings (SavingsPct). BestOnDemandPlan names that plan. Zero
	// and empty when not known: no on-demand plan fits the spec, or the job was started
	// before the job priced it (version best-on-demand-baseline).
	BestOnDemandCostUSD float64 `json:"best_on_demand_cost_usd,omitempty"`
	BestOnDemandPlan    string  `json:"best_on_demand_plan,omitempty"`
	// HoldingOnDemandCostUSD is the machines the job held so far, for as long as it held them,
	// priced on demand: idle, recovery and redone time included, so it flatters spot and is
	// not the job's on-demand baseline (BestOnDemandCostUSD is). Its JSON name,
	// on_demand_cost_usd, is kept from before the baseline existed, with the same meaning.
	HoldingOnDemandCostUSD float64 `json:"on_demand_cost_usd"`
	// GPUHours are the GPU-hours the cost meter counted so far (provider hours, as CostUSD:
	// a machine is counted while it is billed, not while it boots or after it is gone).
	GPUHours float64 `json:"gpu_hours"`
	// Preemptions counts instances the provider reclaimed; LostInstances those lost
	// otherwise (terminated by someone else, unknown to the provider, stuck without an agent).
	Preemptions   int `json:"preemptions"`
	LostInstances int `json:"lost_instances,omitempty"`
	Replans       int `json:"replans"`
	Epoch         int `json:"epoch"`
	// LastCheckpoint is the newest durable step (-1 none); Restores counts restores.
	LastCheckpoint       int64  `json:"last_checkpoint"`
	CheckpointsCommitted int    `json:"checkpoints_committed"`
	Restores             int    `json:"restores"`
	LostIterations       int64  `json:"lost_iterations"`
	Budget               Budget `json:"budget"`
	// CheckpointStore is the job's own checkpoint namespace (JobStore): where its trainers
	// save, what it restores from and what it verifies; never another job's.
	CheckpointStore string `json:"checkpoint_store,omitempty"`
	// Deadline is the spec's deadline resolved once, at the job's start, in wall time
	// (zero: none).
	Deadline  time.Time    `json:"deadline,omitempty"`
	Paused    bool         `json:"paused"`
	Plans     []PlanRecord `json:"plans"`
	StartedAt time.Time    `json:"started_at"`
	UpdatedAt time.Time    `json:"updated_at"`
	// Stale is set by clients, never by the job: true when the job could not answer (a
	// control plane too busy to run the query, no worker left for a closed job) and this is
	// the summary it last published in its memo (MemoStatus), as of UpdatedAt, without
	// plans or timeline.
	Stale bool   `json:"stale,omitempty"`
	Error string `json:"error,omitempty"`
	// Notices counts preemption notices received; Instances are the held instance ids.
	Notices   int      `json:"notices"`
	Instances []string `json:"instances,omitempty"`
	// Zones held now, sorted (SchoonerZones).
	Zones []string `json:"zones,omitempty"`
	// StateVerified is true when the final durable step matched an uninterrupted simulated
	// run bit for bit (sim trainer only); VerifyError says why not.
	StateVerified bool   `json:"state_verified"`
	VerifyError   string `json:"verify_error,omitempty"`
	// LeakedInstances counts instances still tagged with the job after the final release.
	LeakedInstances int `json:"leaked_instances"`
	// Timeline samples the job at its events, bounded in length (see TimelinePoint).
	Timeline []TimelinePoint `json:"timeline,omitempty"`
	// OnDemandPurchases are the deadline policy's decisions to buy on-demand GPUs, each with
	// its reason (spot-with-fallback jobs with a deadline).
	OnDemandPurchases []OnDemandPurchase `json:"on_demand_purchases,omitempty"`
}

// OnDemandPurchase is one decision to hold more on-demand GPUs: when, how many more, where
// (all of the decision's on-demand GPUs per zone), why, and what the GPUs it added cost.
type OnDemandPurchase struct {
	At    time.Time      `json:"at"`
	GPUs  int            `json:"gpus"`
	Zones map[string]int `json:"zones,omitempty"`
	Why   string         `json:"why,omitempty"`
	// USDPerHour is what the GPUs added cost per hour on demand: GPUs at the on-demand price
	// per GPU of the offering the policy reasons in, in the decision's zone (0: not known,
	// a decision recorded before the policy said its price).
	USDPerHour float64 `json:"usd_per_hour,omitempty"`
}

// ZoneList is the purchase's GPUs by zone for people, "zone: n" in zone order.
func (p OnDemandPurchase) ZoneList() string {
	zones := make([]string, 0, len(p.Zones))
	for z, g := range p.Zones {
		zones = append(zones, fmt.Sprintf("%s: %d", z, g))
	}
	sort.Strings(zones)
	return strings.Join(zones, ", ")
}

// SavingsPct is how much less the job cost than its baseline, in per cent of the baseline:
// the whole job on its best on-demand plan (BestOnDemandCostUSD). ok is false while that is
// not known. Before the job ends, CostUSD is the cost so far, so the figure is only the
// job's saving once it has finished.
func (s JobStatus) SavingsPct() (pct float64, ok bool) {
	if s.BestOnDemandCostUSD <= 0 {
		return 0, false
	}
	return 100 * (1 - s.CostUSD/s.BestOnDemandCostUSD), true
}

// TimelinePoint is a sample of the job taken at every event that changes it (acquisition,
// preemption, replan, checkpoint, progress signal), kept for the report's timeline. The
// workflow thins old points so its state and query answers stay bounded (a few hundred
// points however long the job): progress samples that changed no holding go first, then
// other events that changed none, and only a timeline of more holding changes than the
// bound loses some of those. CostUSD and GPUHours are running totals, so the GPU-hours and
// dollars between any two points, and the job's totals at the last, are exact whatever was
// dropped in between.
type TimelinePoint struct {
	At        time.Time `json:"at"`
	Iteration int64     `json:"iteration"`
	// CostUSD and GPUHours are the meter's totals at At (JobStatus.CostUSD and GPUHours).
	CostUSD  float64        `json:"cost_usd"`
	GPUHours float64        `json:"gpu_hours,omitempty"`
	GPUs     map[string]int `json:"gpus"` // held at At, same keys as JobStatus.GPUs
	Event    string         `json:"event,omitempty"`
}

// MemoStatus is the memo key under which a job keeps the status it last published (without
// plans and timeline): DescribeWorkflowExecution returns it without a worker, so a client can
// still say something true about a job whose control plane is busy or gone.
const MemoStatus = "schooner-status"

// Published is the status as a job publishes it in its memo: plans and timeline left out to
// keep the visibility record small.
func (s JobStatus) Published() JobStatus {
	s.Plans, s.Timeline = nil, nil
	return s
}
