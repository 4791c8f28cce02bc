package trainingact

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/checkpoint/store"
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
// cancellation and errors into Temporal's. One Trainer serves every job on the node; its
// fields are the Supervisor's (see node.Supervisor), read at the first call.
type Trainer struct {
	NodeID         string
	DataDir        string
	Reporter       JobReporter
	OpenStore      func(ctx context.Context, url string) (store.Store, error)
	ShmDir         string
	HeartbeatEvery time.Duration
	ProgressEvery  time.Duration
	CommandGrace   time.Duration
	Logger         zerolog.Logger

	once sync.Once
	sup  *node.Supervisor
}

// supervisor is the node's Supervisor, made from t's fields on first use.
func (t *Trainer) supervisor() *node.Supervisor {
	t.once.Do(func() {
		t.sup = &node.Supervisor{NodeID: t.NodeID, DataDir: t.DataDir, Reporter: t.Reporter, OpenStore: t.OpenStore,
			ShmDir: t.ShmDir, HeartbeatEvery: t.HeartbeatEvery, ProgressEvery: t.ProgressEvery,
			CommandGrace: t.CommandGrace, Logger: t.Logger}
	})
	return t.sup
}

// RunTrainer runs one trainer of an assignment to its end (node.Supervisor.Run), heartbeating
// its training.Progress. It returns ctx's error when the job cancels it; a non-retryable
// BadAssignment or TrainerStopped error; and, after Kill, no result at all
// (activity.ErrResultPending), as a vanished machine.
func (t *Trainer) RunTrainer(ctx context.Context, a training.Assignment) (training.TrainerResult, error) {
	res, err := t.supervisor().Run(ctx, a, func(p training.Progress) { activity.RecordHeartbeat(ctx, p) })
	switch {
	case err == nil:
		return res, nil
	case errors.Is(err, node.ErrVanished):
		return res, activity.ErrResultPending
	case errors.Is(err, node.ErrBadAssignment):
		return res, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadAssignment, err)
	case errors.Is(err, node.ErrStopped):
		return res, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeTrainerStopped, nil)
	}
	return res, err
}

// StopTrainers stops this node's trainers of req.JobID from epochs before req.BeforeEpoch
// (node.Supervisor.Stop); their RunTrainers return a TrainerStopped error at once. It returns
// how many it stopped.
func (t *Trainer) StopTrainers(_ context.Context, req training.StopRequest) (int, error) {
	return t.supervisor().Stop(req), nil
}

// Notice passes a preemption notice of this machine to every running trainer's checkpoint
// agent and returns the jobs concerned (node.Supervisor.Notice).
func (t *Trainer) Notice(deadline time.Time) []string { return t.supervisor().Notice(deadline) }

// NoticeJob passes a preemption notice of another machine of job to this node's trainers of
// that job and says whether any runs here (node.Supervisor.NoticeJob).
func (t *Trainer) NoticeJob(jobID string, deadline time.Time) bool {
	return t.supervisor().NoticeJob(jobID, deadline)
}

// Kill makes this node behave as a machine that vanished (node.Supervisor.Kill): running
// RunTrainers return no result, later ones fail.
func (t *Trainer) Kill() { t.supervisor().Kill() }

// Running lists the assignments running on this node, by job, then rank.
func (t *Trainer) Running() []training.Assignment { return t.supervisor().Running() }
