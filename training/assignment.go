package training

import (
	"time"

	"github.com/schooner-ml/schooner/checkpoint"
)

// Assignment is what one trainer process runs under one plan: its place in the plan, where to
// resume from and how fast the planner expects it to go. A replan gives every trainer a new
// assignment with a higher Epoch.
type Assignment struct {
	JobID      string `json:"job_id"`
	Epoch      int    `json:"epoch"`
	InstanceID string `json:"instance_id"`
	// Rank is stage*DP + replica; Stage and Replica locate the trainer in the plan.
	Rank    int `json:"rank"`
	Stage   int `json:"stage"`
	Replica int `json:"replica"`
	// Layers is the half-open range of model layers this trainer's stage holds.
	Layers checkpoint.StageLayers `json:"layers"`
	// Plan is the whole layout: the checkpoint manifest records it and a restore reshards
	// from the layout a checkpoint was taken under to this one.
	Plan checkpoint.PlanInfo `json:"plan"`
	// Model and ModelLayers describe the model; Seed its deterministic simulated state.
	Model       string `json:"model"`
	ModelLayers int    `json:"model_layers"`
	Seed        int64  `json:"seed"`
	// RestoreStep is the durable checkpoint to restore before training (-1: start fresh);
	// the trainer resumes at iteration RestoreStep.
	RestoreStep int64 `json:"restore_step"`
	// Iterations is the job's total; the trainer stops after that iteration.
	Iterations int64 `json:"iterations"`
	// IterSeconds is the planner's predicted time of one iteration under this plan, in
	// simulated seconds; TimeScale is simulated seconds per wall second.
	IterSeconds float64 `json:"iter_seconds"`
	TimeScale   float64 `json:"time_scale"`
	// CheckpointEvery and Store come from the spec. Saver is true for the one replica of each
	// stage that writes the stage's shard.
	CheckpointEvery int64  `json:"checkpoint_every"`
	Store           string `json:"store"`
	Saver           bool   `json:"saver"`
	// Trainer is the spec's trainer section (sim or command).
	Trainer Trainer `json:"trainer"`
}

// Progress is what a trainer reports: in its activity heartbeats and in the job's progress
// signal.
type Progress struct {
	Epoch      int    `json:"epoch"`
	Rank       int    `json:"rank"`
	InstanceID string `json:"instance_id"`
	Iteration  int64  `json:"iteration"`
	// LastCheckpoint is the newest step this trainer's shard is durable for (-1: none).
	LastCheckpoint int64 `json:"last_checkpoint"`
}

// NoticeRequest tells a node that a machine of JobID will be preempted at Deadline (wall
// time): its trainers of the job take emergency checkpoints on the same grid as the stage on
// the machine that goes, or a multi-stage step would never be durable.
type NoticeRequest struct {
	JobID    string    `json:"job_id"`
	Instance string    `json:"instance"`
	Deadline time.Time `json:"deadline"`
}

// StopRequest asks a node to stop its trainers of a job from epochs before BeforeEpoch at
// once. Cancelling a trainer's activity reaches it only with a heartbeat reply, and the SDK
// sends heartbeats at most every 80% of the heartbeat timeout, so a replan that waited for
// that would idle the surviving machines for seconds; the node's own queue delivers this at
// once.
type StopRequest struct {
	JobID       string `json:"job_id"`
	BeforeEpoch int    `json:"before_epoch"`
}
