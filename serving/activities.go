package serving

import (
	"context"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
)

// Activity names of the serving flow. The instance activities (acquire, describe, release,
// list, time scale) are package fleet's, shared with training.
const (
	// ActivityOfferings lists what a deployment may buy (a fleet-level activity: the same
	// filtering as training's JobOfferings, fleetact.Offerings).
	ActivityOfferings = "Offerings"
	// ActivityRunStage runs one stage's inference worker on the instance's node queue
	// (taskqueue.Node), heartbeating; it returns when the worker exits.
	ActivityRunStage = "RunStage"
)

// ErrTypeInvalidSpec is the error type of a deployment refused at the door (the same string
// as training's): non-retryable, the details are the []FieldError naming every bad field.
const ErrTypeInvalidSpec = "InvalidSpec"

// OfferingsRequest asks what the deployment may buy: the provider's offerings narrowed to
// the spec's resources (a region, zone or GPU type nobody offers is an InvalidSpec error).
type OfferingsRequest struct {
	Resources fleet.Resources `json:"resources"`
}

// LayerRange is the half-open range [First, End) of model layers a stage holds.
type LayerRange struct {
	First int `json:"first"`
	End   int `json:"end"`
}

// StageAssignment is what one inference worker runs: its place in the pipeline, the model,
// and where its KV cache goes.
//
// Start order: the workflow starts a replica's stages from the last to the first, each once
// the stage after it reported stage-ready, so a stage starts knowing the worker it sends
// activations to (NextWorkerAddr) and the holder it replicates to (NextHolderAddr). The last
// stage starts first, before stage 0 (its ring successor) is known; it, and any stage whose
// successor is replaced later, finds the current addresses in the stages query (Pipeline).
//
// A prefill replica's stage (Pool PoolPrefill) is told its own pipeline's next worker, but the
// holder that the same stage of the decode replica it feeds restores from (pools.go): it
// starts once that holder is known.
type StageAssignment struct {
	Deployment string `json:"deployment"`
	InstanceID string `json:"instance_id"`
	// Pool is PoolPrefill for a prefill replica's stage, else empty (PoolDecode); prefill and
	// decode replicas are numbered apart.
	Pool    string `json:"pool,omitempty"`
	Replica int    `json:"replica"`
	Stage   int    `json:"stage"`
	// Depth is the pipeline's number of stages.
	Depth  int        `json:"depth"`
	Layers LayerRange `json:"layers"`
	// Model is the model's dimensions (Model.Dims) and seed.
	Model      Model `json:"model"`
	MaxBatch   int   `json:"max_batch"`
	MaxContext int   `json:"max_context"`
	// Replication streams the KV cache to NextHolderAddr (spec kv_replication "on").
	Replication bool `json:"replication"`
	// NextHolderAddr is the KV-cache holder on the node of stage (Stage+1) mod Depth; empty
	// until that stage reported ready.
	NextHolderAddr string `json:"next_holder_addr,omitempty"`
	// NextWorkerAddr is the worker of stage (Stage+1) mod Depth (activations; for the last
	// stage, sampled tokens back to stage 0); empty until known.
	NextWorkerAddr string `json:"next_worker_addr,omitempty"`
	// Epoch is this start's own number, echoed in stage-ready; higher than every earlier one.
	Epoch int `json:"epoch"`
	// Restore: a replacement (or a restart) of the stage: the worker pulls its KV cache back
	// from NextHolderAddr, and the previous stage re-sends the replica it held.
	Restore bool `json:"restore"`
	// PreloadSeconds (> 0): a standby taking over a noticed machine's stage. Before it
	// listens (and so before it is reported ready and switched to), its worker spends at most
	// this long fetching the replicas of its stage from NextHolderAddr while the stage it
	// replaces keeps serving; at the switch each request then fetches only the steps decoded
	// since. Bounded by the notice's deadline (less the switch's own time) so that a slow
	// preload cannot hold the migration past the machine's reclaim; what is not preloaded in
	// time restores at the switch.
	PreloadSeconds float64 `json:"preload_s,omitempty"`
	// KVSwapGiB (> 0): microbatch swapping with this much pinned host memory (spec kv_swap_gib).
	KVSwapGiB float64 `json:"kv_swap_gib,omitempty"`
	// Adopt: the deployment continued as new; a worker of this (deployment, replica, stage)
	// still running on the node is kept and reported ready again instead of restarted.
	Adopt bool `json:"adopt,omitempty"`
	// TimeScale is the provider's (simulated seconds per wall second).
	TimeScale float64 `json:"time_scale,omitempty"`
}

// StageResult is what RunStage returns when the worker exited on its own or drained after
// its activity was cancelled.
type StageResult struct {
	Replica int    `json:"replica"`
	Stage   int    `json:"stage"`
	Epoch   int    `json:"epoch"`
	Reason  string `json:"reason,omitempty"`
	// Requests counts the requests the worker finished.
	Requests int64 `json:"requests,omitempty"`
}

// ControlActivities are the deployment's activities on the control queue besides the fleet
// instance activities; activities/servingact implements them.
type ControlActivities interface {
	Offerings(ctx context.Context, req OfferingsRequest) ([]cloud.Offering, error)
}

// NodeActivities are the deployment's activities on an instance's own node queue; the node
// agent implements them (the Python inference worker and the KV-cache holder).
type NodeActivities interface {
	RunStage(ctx context.Context, a StageAssignment) (StageResult, error)
}
