package training

import (
	"context"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/planner"
)

// JobOfferingsRequest asks what the job may buy: the spec's resources and spot policy (every
// offering carries both prices; PlanJob prices them as the policy allows).
type JobOfferingsRequest struct {
	Resources Resources  `json:"resources"`
	Spot      SpotPolicy `json:"spot"`
}

// PlanJobRequest is one planning question for the PlanJob local activity: the model and
// objective from the spec, the GPUs the job holds (Survivors, priced as bought) and the
// offerings it may still buy (already filtered of unavailable keys and avoided zones).
type PlanJobRequest struct {
	Model       Model  `json:"model"`
	SeqLen      int    `json:"seq_len,omitempty"`
	GlobalBatch int    `json:"global_batch"`
	Objective   string `json:"objective,omitempty"`
	// USDPerHourCap rejects plans that cost more per hour (0: no cap).
	USDPerHourCap float64 `json:"usd_per_hour_cap,omitempty"`
	// MaxGPUs bounds the GPUs of the plan (0: no bound).
	MaxGPUs   int              `json:"max_gpus,omitempty"`
	Survivors []cloud.Instance `json:"survivors,omitempty"`
	Offers    []cloud.Offering `json:"offers,omitempty"`
	// AllOffers are every offering the spec allows, short or not, for telling a job that no
	// capacity could ever fit from one in a drought (empty: Offers).
	AllOffers []cloud.Offering `json:"all_offers,omitempty"`
	// OnDemand prices the offers on demand as well as spot (spot-with-fallback when the
	// deadline is at risk, or an on-demand-only job).
	OnDemand bool `json:"on_demand,omitempty"`
	// SpotOff leaves spot offers out (an on-demand-only job).
	SpotOff bool `json:"spot_off,omitempty"`
	// SpotGPUs and OnDemandGPUs, when set, cap the GPUs of each capacity type the plan may
	// take per zone (a zone left out: none): what the deadline policy asked to hold. Held
	// instances count against them like offers.
	SpotGPUs     map[string]int `json:"spot_gpus,omitempty"`
	OnDemandGPUs map[string]int `json:"on_demand_gpus,omitempty"`
	// AssumeInstances is how many instances an offering without a capacity hint (and every
	// on-demand offering) is assumed to have; 0 means 4.
	AssumeInstances int           `json:"assume_instances,omitempty"`
	Current         *planner.Plan `json:"current,omitempty"`
}

// PlannedReplica places one rank of a plan: which offering (capacity type × instance type ×
// zone) its TP GPUs come from. Ranks are stage*DP + replica.
type PlannedReplica struct {
	Rank            int               `json:"rank"`
	Stage           int               `json:"stage"`
	Replica         int               `json:"replica"`
	Key             cloud.OfferingKey `json:"key"`
	GPUs            int               `json:"gpus"`
	GPUsPerInstance int               `json:"gpus_per_instance"`
}

// PlanJobResult is the planner's answer, with the placement the workflow acquires for.
type PlanJobResult struct {
	Plan     planner.Plan     `json:"plan"`
	Estimate planner.Estimate `json:"estimate"`
	Summary  string           `json:"summary"`
	// ModelLayers is the model's layer count as the planner numbers them (embedding and head
	// included), the checkpoint's layer space.
	ModelLayers int              `json:"model_layers"`
	Replicas    []PlannedReplica `json:"replicas"`
}

// VerifyStateRequest asks VerifyTrainedState to compare a durable step with an
// uninterrupted simulated run.
type VerifyStateRequest struct {
	Store       string `json:"store"`
	Step        int64  `json:"step"`
	Seed        int64  `json:"seed"`
	ModelLayers int    `json:"model_layers"`
}

// Activity names of the training flow, implemented by activities/trainingact and
// called by name from workflows/trainingwf; the instance activities are package fleet's.
const (
	ActivityJobOfferings       = "JobOfferings"
	ActivityPlanJob            = "PlanJob"         // a local activity
	ActivityDecideSpot         = "DecideSpot"      // a local activity
	ActivityBestOnDemand       = "BestOnDemand"    // a local activity
	ActivityAdmissionLimits    = "AdmissionLimits" // a local activity
	ActivityLatestCheckpoint   = "LatestDurableCheckpoint"
	ActivityRunTrainer         = "RunTrainer"     // on the instance's node queue
	ActivityStopTrainers       = "StopTrainers"   // on the instance's node queue
	ActivityNoticeTrainers     = "NoticeTrainers" // on the instance's node queue
	ActivityVerifyTrainedState = "VerifyTrainedState"
)

// ControlActivities are the job's activities on the control queue (the instance activities
// are fleet.Activities). activities/trainingact implements them; the workflow's tests stand
// in for them with functions of these very signatures.
type ControlActivities interface {
	JobOfferings(ctx context.Context, req JobOfferingsRequest) ([]cloud.Offering, error)
	PlanJob(ctx context.Context, req PlanJobRequest) (PlanJobResult, error)
	// DecideSpot runs the deadline policy for a running job (SpotDecisionRequest).
	DecideSpot(ctx context.Context, req SpotDecisionRequest) (SpotDecision, error)
	// BestOnDemand prices the job on its best on-demand plan (BestOnDemandRequest).
	BestOnDemand(ctx context.Context, req BestOnDemandRequest) (OnDemandBaseline, error)
	LatestDurableCheckpoint(ctx context.Context, storeURL string) (int64, error)
	VerifyTrainedState(ctx context.Context, req VerifyStateRequest) error
	// AdmissionLimits are the control plane's job limits (zero fields: DefaultLimits').
	AdmissionLimits(ctx context.Context) (Limits, error)
}

// NodeActivities are the job's activities on an instance's own node queue.
type NodeActivities interface {
	RunTrainer(ctx context.Context, a Assignment) (TrainerResult, error)
	StopTrainers(ctx context.Context, req StopRequest) (int, error)
	// NoticeTrainers passes a preemption notice of another machine of the job to this node's
	// trainers of it, so every stage saves on the same emergency grid.
	NoticeTrainers(ctx context.Context, req NoticeRequest) (bool, error)
}
