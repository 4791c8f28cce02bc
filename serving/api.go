// The contract of a ServingDeployment, without Temporal: its type name, input, phases, the
// names and payloads of its signals, updates and queries, and the status it answers with. The
// workflow (workflows/servingwf), its activities (activities/servingact), the node agents that
// run the inference workers, the router and every client speak only these.

package serving

import (
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/internal/defaults"
)

// WorkflowServingDeployment is the ServingDeployment workflow's type name; a deployment's
// workflow id is its deployment id (instances are tagged with it, cloud.JobTag).
const WorkflowServingDeployment = "ServingDeployment"

// Messages of a ServingDeployment.
const (
	// SignalStageReady: a stage's inference worker listens and its node's KV-cache holder
	// too (StageReady), sent by the node side of RunStage.
	SignalStageReady = "stage-ready"
	// SignalPreemptionNotice: fleet's, the same as a TrainingJob's (the preemption relay
	// signals whatever workflow tagged the instance).
	SignalPreemptionNotice = fleet.SignalPreemptionNotice
	// UpdateScale sets the number of replicas of either pool (ScaleRequest).
	UpdateScale = "scale"
	// UpdateStop drains every stage, releases every instance and ends the deployment
	// (StopRequest); it returns the final status.
	UpdateStop = "stop"
	// QueryStatus answers Status; QueryStages answers Pipeline, what the router polls.
	QueryStatus = "status"
	QueryStages = "stages"
)

// Deployment phases, as SchoonerPhase shows them.
const (
	PhasePlanning   = "planning"
	PhaseAcquiring  = "acquiring"
	PhaseStarting   = "starting"   // stages are starting (first start, or replicas added)
	PhaseServing    = "serving"    // every stage of every replica is ready
	PhaseRecovering = "recovering" // a stage that served was lost and is being replaced
	PhaseStopping   = "stopping"
	PhaseStopped    = "stopped"
	PhaseFailed     = "failed"
)

// Stage states in StageStatus.
const (
	StateStarting = "starting"
	StateReady    = "ready"
	StateLost     = "lost"
)

// DeployInput starts a deployment. Carried (nil on a fresh start) is the state handed over
// by continue-as-new.
type DeployInput struct {
	Spec        Spec      `json:"spec"`
	SubmittedAt time.Time `json:"submitted_at"`
	// Options tunes the control loop; zero fields take DeployOptions' defaults.
	Options DeployOptions `json:"options,omitempty"`
	Carried *CarryState   `json:"carried,omitempty"`
}

// DeployOptions tunes a deployment's control loop. Durations marked wall are workflow (wall)
// time; those marked provider are converted with the provider's time scale.
type DeployOptions struct {
	// HeartbeatTimeout (wall, default 10 s): a RunStage silent this long has failed.
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"`
	// ScheduleToStartTimeout (wall, default 2 min): a RunStage no node agent picked up by
	// then means the machine is stuck; it is replaced.
	ScheduleToStartTimeout time.Duration `json:"schedule_to_start_timeout,omitempty"`
	// StageReadyTimeout (wall, default 10 min): a started stage that has not reported
	// stage-ready by then is treated as failed.
	StageReadyTimeout time.Duration `json:"stage_ready_timeout,omitempty"`
	// PollInterval (wall, default 5 s): how often held instances are described, to catch a
	// machine lost without a notice.
	PollInterval time.Duration `json:"poll_interval,omitempty"`
	// UnavailableTTL (provider, default 3 min): how long a short offering is left out.
	UnavailableTTL time.Duration `json:"unavailable_ttl,omitempty"`
	// AvoidZoneTTL (provider, default 10 min): how long a zone that preempted (or gave a
	// notice) is avoided.
	AvoidZoneTTL time.Duration `json:"avoid_zone_ttl,omitempty"`
	// SpotReturnEvery (provider, default 10 min; negative: never): how often a stage that
	// fell back to an on-demand machine (spot-with-fallback) looks for spot room to move back
	// to. It moves as after a notice (a standby on spot, switched to when ready), so no
	// request is interrupted and the deployment pays spot again once spot returns.
	SpotReturnEvery time.Duration `json:"spot_return_every,omitempty"`
	// IgnoreNotices makes the deployment act on losses only: a preemption notice starts no
	// migration, the stage is replaced after its machine is gone. It is the restart-only
	// baseline that `schooner demo serve --policy restart-only` measures against; no user
	// wants it otherwise.
	IgnoreNotices bool `json:"ignore_notices,omitempty"`
	// RetryWait (wall, default 5 s): the wait before placing again when capacity is short.
	RetryWait time.Duration `json:"retry_wait,omitempty"`
	// DrainTimeout (wall, default 30 s): how long a stop waits for the stages to drain.
	DrainTimeout time.Duration `json:"drain_timeout,omitempty"`
	// MaxStageRestarts (default 3): failures of a stage on a live machine in a row before
	// the machine is replaced.
	MaxStageRestarts int `json:"max_stage_restarts,omitempty"`
	// MaxAcquireRounds (default 3): place → acquire rounds before waiting RetryWait.
	MaxAcquireRounds int `json:"max_acquire_rounds,omitempty"`
	// ContinueAsNewAfter (default 0: only when the server suggests it) continues as new
	// after this many events in one run; tests use it.
	ContinueAsNewAfter int `json:"continue_as_new_after,omitempty"`
}

// WithDefaults fills the zero fields.
func (o DeployOptions) WithDefaults() DeployOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.HeartbeatTimeout, 10*time.Second)
	def(&o.ScheduleToStartTimeout, 2*time.Minute)
	def(&o.StageReadyTimeout, 10*time.Minute)
	def(&o.PollInterval, 5*time.Second)
	def(&o.UnavailableTTL, 3*time.Minute)
	def(&o.AvoidZoneTTL, 10*time.Minute)
	def(&o.RetryWait, 5*time.Second)
	if o.SpotReturnEvery == 0 {
		o.SpotReturnEvery = 10 * time.Minute
	}
	def(&o.DrainTimeout, 30*time.Second)
	defaults.Positive(&o.MaxStageRestarts, 3)
	defaults.Positive(&o.MaxAcquireRounds, 3)
	return o
}

// CarryState is what a deployment needs to go on after continue-as-new.
type CarryState struct {
	Status    Status           `json:"status"`
	Instances []cloud.Instance `json:"instances"`
	Slots     []CarriedSlot    `json:"slots"`
	// OnDemandPrices of the held instances by id, for the on-demand comparison.
	OnDemandPrices map[string]float64 `json:"on_demand_prices,omitempty"`
	Unavailable    cloud.ExpirySet    `json:"unavailable,omitempty"`
	Avoided        cloud.ExpirySet    `json:"avoided,omitempty"`
	TimeScale      cloud.TimeScale    `json:"time_scale,omitempty"`
	// Fleets counts the Fleet children started so far (their ids stay unique).
	Fleets int `json:"fleets,omitempty"`
}

// CarriedSlot is one (replica, stage) as the previous run left it: a ready stage keeps its
// addresses (the router keeps routing) while the new run re-attaches to it (Adopt).
type CarriedSlot struct {
	Pool       string    `json:"pool,omitempty"`
	Replica    int       `json:"replica"`
	Stage      int       `json:"stage"`
	InstanceID string    `json:"instance_id,omitempty"`
	State      string    `json:"state,omitempty"`
	WorkerAddr string    `json:"worker_addr,omitempty"`
	HolderAddr string    `json:"holder_addr,omitempty"`
	NoticedAt  time.Time `json:"noticed_at,omitempty"`
	ReclaimAt  time.Time `json:"reclaim_at,omitempty"`
}

// PreemptionNotice tells the deployment an instance will be reclaimed or is gone (fleet's,
// the same type a TrainingJob receives).
type PreemptionNotice = fleet.PreemptionNotice

// StageReady is sent by the node side once the stage's inference worker accepts connections
// and its node's KV-cache holder listens. Epoch is the assignment's: a report of an older
// epoch (a replaced run) is ignored.
type StageReady struct {
	// Pool is the assignment's (PoolDecode or PoolPrefill).
	Pool       string `json:"pool,omitempty"`
	Replica    int    `json:"replica"`
	Stage      int    `json:"stage"`
	InstanceID string `json:"instance"`
	Epoch      int    `json:"epoch"`
	// WorkerAddr is the inference worker's host:port (router and previous stage connect);
	// HolderAddr the KV-cache holder's on the same node (the previous stage replicates there).
	WorkerAddr string `json:"worker_addr"`
	HolderAddr string `json:"holder_addr"`
}

// ScaleRequest sets the number of pipeline replicas (the decode replicas of a disaggregated
// deployment) and, when PrefillReplicas is given, the prefill pool's. Replicas 0 with
// PrefillReplicas given keeps the decode replicas as they are, so each pool scales on its own.
type ScaleRequest struct {
	Replicas        int  `json:"replicas,omitempty"`
	PrefillReplicas *int `json:"prefill_replicas,omitempty"`
}

// StopRequest stops the deployment gracefully; Reason is recorded.
type StopRequest struct {
	Reason string `json:"reason,omitempty"`
}

// StageStatus is one (replica, stage) of the deployment.
type StageStatus struct {
	// Pool is PoolPrefill for a prefill replica's stage, else empty (PoolDecode).
	Pool       string             `json:"pool,omitempty"`
	Replica    int                `json:"replica"`
	Stage      int                `json:"stage"`
	Layers     LayerRange         `json:"layers"`
	InstanceID string             `json:"instance_id,omitempty"`
	Zone       string             `json:"zone,omitempty"`
	Capacity   cloud.CapacityType `json:"capacity,omitempty"`
	WorkerAddr string             `json:"worker_addr,omitempty"`
	HolderAddr string             `json:"holder_addr,omitempty"`
	// State is starting, ready or lost ("" while no machine is assigned yet).
	State string `json:"state,omitempty"`
	Epoch int    `json:"epoch,omitempty"`
	// Standby is the replacement being brought up ahead of a preemption notice's deadline.
	Standby string `json:"standby,omitempty"`
	// NoticedAt is when a preemption notice for the stage's machine came (zero: none). The
	// stage keeps serving there, and reads ready, until its replacement is ready; then the
	// machine is released. A client about to use or fault this machine should wait for it.
	NoticedAt time.Time `json:"noticed_at,omitzero"`
	// ReclaimAt is the notice's deadline in wall time (zero: none, or the notice came
	// without one): the machine goes then, and the standby's preload must end before it.
	ReclaimAt time.Time `json:"reclaim_at,omitzero"`
}

// Failover is one replacement of a stage's machine.
type Failover struct {
	// At is when the loss was seen (no notice) or the notice came (Notice true).
	At      time.Time `json:"at"`
	Pool    string    `json:"pool,omitempty"`
	Replica int       `json:"replica"`
	Stage   int       `json:"stage"`
	Notice  bool      `json:"notice"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	// Seconds is wall time from At to the replacement's stage-ready; DowntimeSeconds the
	// part of it the stage had no ready worker (0 for a migration done before the loss).
	Seconds         float64   `json:"seconds"`
	DowntimeSeconds float64   `json:"downtime_seconds"`
	ReadyAt         time.Time `json:"ready_at"`
}

// Status is what the status query returns and the deployment's result ends with.
type Status struct {
	DeploymentID string `json:"deployment_id"`
	Name         string `json:"name"`
	Model        string `json:"model"`
	Phase        string `json:"phase"`
	// Replicas is the number asked for (scale); Depth the stages per replica.
	Replicas int `json:"replicas"`
	// PrefillReplicas is the prefill pool's replicas laid out (0: colocated).
	PrefillReplicas int           `json:"prefill_replicas,omitempty"`
	Depth           int           `json:"depth"`
	Stages          []StageStatus `json:"stages"`
	// Failovers counts replaced stages; FailoverRecords keeps the latest maxFailoverRecords.
	Failovers       int        `json:"failovers"`
	FailoverRecords []Failover `json:"failover_records,omitempty"`
	Preemptions     int        `json:"preemptions"`
	LostInstances   int        `json:"lost_instances,omitempty"`
	Notices         int        `json:"notices"`
	// SpotReturns counts stages moved from an on-demand fallback machine back to spot.
	SpotReturns int `json:"spot_returns,omitempty"`
	// CostUSD so far; OnDemandCostUSD the same holding at on-demand prices; USDPerHour now.
	CostUSD         float64 `json:"cost_usd"`
	OnDemandCostUSD float64 `json:"on_demand_cost_usd"`
	USDPerHour      float64 `json:"usd_per_hour"`
	// GPUs held now; Zones held now, sorted; Instances the held ids (standbys included).
	GPUs      int      `json:"gpus"`
	Zones     []string `json:"zones,omitempty"`
	Instances []string `json:"instances,omitempty"`
	// Epoch counts RunStage starts (every start has its own).
	Epoch           int       `json:"epoch"`
	LeakedInstances int       `json:"leaked_instances"`
	Error           string    `json:"error,omitempty"`
	StartedAt       time.Time `json:"started_at"`
	UpdatedAt       time.Time `json:"updated_at"`
	// Stale is set by clients only: the status was read from the memo (MemoStatus).
	Stale bool `json:"stale,omitempty"`
}

// MaxFailoverRecords bounds Status.FailoverRecords (the count goes on).
const MaxFailoverRecords = 100

// MemoStatus is the memo key under which a deployment keeps the status it last published.
const MemoStatus = "schooner-status"

// Published is the status as kept in the memo: without failover records.
func (s Status) Published() Status {
	s.FailoverRecords = nil
	return s
}

// Pipeline is what the stages query answers: the router's view of the deployment.
type Pipeline struct {
	Deployment string `json:"deployment"`
	// Model is the id requests name (/v1/models lists it).
	Model string `json:"model"`
	Phase string `json:"phase"`
	// Version changes whenever an address or a ready state changes: a router polling the
	// query reconfigures only when it moves.
	Version  int             `json:"version"`
	Replicas []ReplicaStages `json:"replicas"`
}

// ReplicaStages is one pipeline replica, stages in order. The router routes only to replicas
// with Ready set (every stage ready); Stages lists every stage, an address only once ready.
//
// A prefill replica (Pool PoolPrefill, numbered apart from the decode replicas) takes the
// prompts of decode replica Feeds; its stages' Holder is not their own node's holder but the
// one its ring predecessor streams prompts to: the holder of the same stage of the decode
// replica it feeds (empty while that stage is not ready), so a prefill stage's node agent
// follows its successor exactly as a decode stage's does.
type ReplicaStages struct {
	Pool    string      `json:"pool,omitempty"`
	Feeds   int         `json:"feeds,omitempty"`
	Replica int         `json:"replica"`
	Ready   bool        `json:"ready"`
	Stages  []StageAddr `json:"stages"`
}

// StageAddr is one stage as the router and the neighbouring stages see it. Addr and Node read
// as router.StageAddr; Holder is the KV-cache holder on the stage's node, which the previous
// stage (in the ring) replicates to.
type StageAddr struct {
	Stage  int    `json:"stage"`
	Addr   string `json:"addr,omitempty"`
	Node   string `json:"node,omitempty"`
	Holder string `json:"holder,omitempty"`
	Ready  bool   `json:"ready"`
	// Moving is set while a standby is being brought up for the stage (its machine was
	// noticed, or it returns to spot): its addresses change soon, so its ring predecessor's
	// agent polls faster until they have.
	Moving bool `json:"moving,omitempty"`
}

// ModelID is the model id the deployment serves: the built-in model's name, or the
// deployment's name for a model given by its dimensions.
func (s Spec) ModelID() string {
	if s.Model.Name != "" {
		return s.Model.Name
	}
	return s.Name
}
