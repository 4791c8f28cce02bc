package servingact

import (
	"context"

	"go.temporal.io/sdk/activity"

	"github.com/schooner-ml/schooner/activities/internal/noderun"
	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/serving/stage"
)

// ErrTypeBadAssignment is the Temporal error type of a stage assignment a node cannot run;
// it is not retryable.
const ErrTypeBadAssignment = "BadStageAssignment"

// Node holds the RunStage activity of one node. It is the Temporal side of a
// stage.Supervisor, which does the work (the inference worker's process, stage-ready, peers):
// Node turns its heartbeats, cancellation and errors into Temporal's. The node agent calls the
// Supervisor's own methods (Kill, Running) through it.
type Node struct {
	*stage.Supervisor
}

// RunStage runs one stage's inference worker until it exits (a result whose reason has the
// exit status and the end of its output) or the deployment cancels the activity (the worker
// is stopped; ctx's error), heartbeating the stage's state (stage.Heartbeat). A worker that
// cannot start is an error; an assignment no node can run a non-retryable BadStageAssignment;
// after Kill (the simulated machine died) there is no result at all
// (activity.ErrResultPending), as from a vanished machine.
func (n *Node) RunStage(ctx context.Context, a serving.StageAssignment) (serving.StageResult, error) {
	res, err := n.Supervisor.Run(ctx, a, func(h stage.Heartbeat) { activity.RecordHeartbeat(ctx, h) })
	return res, noderun.Err(err, stage.ErrVanished,
		noderun.NonRetryable{Class: stage.ErrBadAssignment, Type: ErrTypeBadAssignment, WithCause: true})
}
