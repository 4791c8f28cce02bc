package trainingact

import (
	"context"

	"go.temporal.io/sdk/activity"

	"github.com/schooner-ml/schooner/activities/internal/noderun"
	"github.com/schooner-ml/schooner/trainer/node"
	"github.com/schooner-ml/schooner/training"
)

// JobReporter carries what a trainer learns to its job (package workers signals the
// TrainingJob workflow). It is an interface so this package does not depend on the workflows
// and tests can record the reports. Its Progress and Committed are the node.Reporter the
// trainers report through; Notice is for the node agent's preemption notices.
type JobReporter interface {
	node.Reporter
	Notice(ctx context.Context, jobID string, n training.PreemptionNotice) error
}

// ErrTypeBadAssignment is the Temporal error type of an assignment a trainer cannot run; it
// is not retryable.
const ErrTypeBadAssignment = "BadAssignment"

// ErrTypeTrainerStopped is the Temporal error type of a trainer its job stopped through
// StopTrainers (a newer epoch takes its place).
const ErrTypeTrainerStopped = "TrainerStopped"

// Trainer holds the RunTrainer and StopTrainers activities of one node. It is the Temporal
// side of a node.Supervisor, which does the work: Trainer turns the activity's heartbeats,
// cancellation and errors into Temporal's. One Trainer serves every job on the node; the
// node agent calls the Supervisor's own methods (Notice, Kill, Running) through it.
type Trainer struct {
	*node.Supervisor
}

// RunTrainer runs one trainer of an assignment to its end (node.Supervisor.Run), heartbeating
// its training.Progress. It returns ctx's error when the job cancels it; a non-retryable
// BadAssignment or TrainerStopped error; and, after Kill, no result at all
// (activity.ErrResultPending), as a vanished machine.
func (t *Trainer) RunTrainer(ctx context.Context, a training.Assignment) (training.TrainerResult, error) {
	res, err := t.Supervisor.Run(ctx, a, func(p training.Progress) { activity.RecordHeartbeat(ctx, p) })
	return res, noderun.Err(err, node.ErrVanished,
		noderun.NonRetryable{Class: node.ErrBadAssignment, Type: ErrTypeBadAssignment, WithCause: true},
		noderun.NonRetryable{Class: node.ErrStopped, Type: ErrTypeTrainerStopped})
}

// NoticeTrainers passes another machine's preemption notice to this node's trainers of the
// job (node.Supervisor.NoticeJob); it reports whether any runs here.
func (t *Trainer) NoticeTrainers(_ context.Context, req training.NoticeRequest) (bool, error) {
	return t.Supervisor.NoticeJob(req.JobID, req.Deadline), nil
}

// StopTrainers stops this node's trainers of req.JobID from epochs before req.BeforeEpoch
// (node.Supervisor.Stop); their RunTrainers return a TrainerStopped error at once. It returns
// how many it stopped.
func (t *Trainer) StopTrainers(_ context.Context, req training.StopRequest) (int, error) {
	return t.Supervisor.Stop(req), nil
}
