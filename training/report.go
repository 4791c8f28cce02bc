package training

import "time"

// Kinds of a Notice, matching cloud.InterruptionKind so the reporter converts without a table.
const (
	NoticeKindNotice    = "notice"
	NoticeKindPreempted = "preempted"
)

// Committed says a checkpoint step is durable in the job's remote store (every stage's shard
// is there), so the job may restore from it. Saver ranks report it; the job still reads the
// latest durable step from the store before acting, and uses this only to keep its status
// current.
type Committed struct {
	Epoch int   `json:"epoch"`
	Rank  int   `json:"rank"`
	Step  int64 `json:"step"`
	// Emergency marks a step saved on a preemption notice, off the regular cadence.
	Emergency bool `json:"emergency,omitempty"`
}

// Notice is what a node agent learned from its instance's metadata: a preemption announced for
// Deadline (Kind "notice"), or the instance already gone (Kind "preempted"). It travels from
// the node to the job so the job can plan ahead of the provider's own report.
type Notice struct {
	InstanceID string    `json:"instance_id"`
	Kind       string    `json:"kind"`
	Deadline   time.Time `json:"deadline,omitempty"`
}
