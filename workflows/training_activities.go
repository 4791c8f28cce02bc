package workflows

import (
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/training"
)

// The payloads of the training flow's control activities. They live here, beside the
// workflows that call the activities by name, so this package never links the activities'
// dependencies (clouds, stores, the planner's profiles); package activities implements them.

// JobOfferingsRequest asks what the job may buy: the spec's resources and spot policy (every
// offering carries both prices; PlanJob prices them as the policy allows).
type JobOfferingsRequest struct {
	Resources training.Resources  `json:"resources"`
	Spot      training.SpotPolicy `json:"spot"`
}

// PlanJobRequest is one planning question for the PlanJob local activity: the model and
// objective from the spec, the GPUs the job holds (Survivors, priced as bought) and the
// offerings it may still buy (already filtered of unavailable keys and avoided zones).
type PlanJobRequest struct {
	Model       training.Model `json:"model"`
	SeqLen      int            `json:"seq_len,omitempty"`
	GlobalBatch int            `json:"global_batch"`
	Objective   string         `json:"objective,omitempty"`
	// USDPerHourCap rejects plans that cost more per hour (0: no cap).
	USDPerHourCap float64 `json:"usd_per_hour_cap,omitempty"`
	// MaxGPUs bounds the GPUs of the plan (0: no bound).
	MaxGPUs   int              `json:"max_gpus,omitempty"`
	Survivors []cloud.Instance `json:"survivors,omitempty"`
	Offers    []cloud.Offering `json:"offers,omitempty"`
	// OnDemand prices the offers on demand as well as spot (spot-with-fallback when the
	// deadline is at risk, or an on-demand-only job).
	OnDemand bool `json:"on_demand,omitempty"`
	// SpotOff leaves spot offers out (an on-demand-only job).
	SpotOff bool `json:"spot_off,omitempty"`
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

// AcquireResult is what AcquireInstances got. A capacity shortage or a quota is a result,
// not an error, so the workflow can replan with what it got.
type AcquireResult struct {
	Instances     []cloud.Instance    `json:"instances"`
	CapacityShort int                 `json:"capacity_short"`
	Unavailable   []cloud.OfferingKey `json:"unavailable,omitempty"`
	Reason        string              `json:"reason,omitempty"`
}

// VerifyStateRequest asks VerifyTrainedState to compare a durable step with an
// uninterrupted simulated run.
type VerifyStateRequest struct {
	Store       string `json:"store"`
	Step        int64  `json:"step"`
	Seed        int64  `json:"seed"`
	ModelLayers int    `json:"model_layers"`
}

// FleetGroup asks for Count instances of one offering.
type FleetGroup struct {
	Key   cloud.OfferingKey `json:"key"`
	Count int               `json:"count"`
}

// FleetInput is the Fleet child workflow's input.
type FleetInput struct {
	JobID  string            `json:"job_id"`
	Groups []FleetGroup      `json:"groups"`
	Tags   map[string]string `json:"tags,omitempty"`
	// Token makes retried creates idempotent; the group index is appended.
	Token string `json:"token,omitempty"`
}

// FleetResult is every instance the fleet obtained (never dropped on a partial failure) and
// the offerings that were short.
type FleetResult struct {
	Instances   []cloud.Instance    `json:"instances"`
	Unavailable []cloud.OfferingKey `json:"unavailable,omitempty"`
	Short       int                 `json:"short"`
	Errors      []string            `json:"errors,omitempty"`
}
