package workers

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/activities/trainingact"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
)

// Reporter carries what trainers and node agents learn to their TrainingJob as signals. The
// job id is the workflow id, and continue-as-new keeps it, so signals go to the current run
// (run id "").
type Reporter struct {
	Client client.Client
}

var _ trainingact.JobReporter = (*Reporter)(nil)

// NewReporter returns a Reporter over c.
func NewReporter(c client.Client) *Reporter { return &Reporter{Client: c} }

// Progress signals a trainer's progress.
func (r *Reporter) Progress(ctx context.Context, jobID string, p training.Progress) error {
	if err := r.Client.SignalWorkflow(ctx, jobID, "", training.SignalProgress, p); err != nil {
		return fmt.Errorf("signalling progress of rank %d to %s: %w", p.Rank, jobID, err)
	}
	return nil
}

// Committed signals a checkpoint step durable in the job's store.
func (r *Reporter) Committed(ctx context.Context, jobID string, c training.CheckpointCommitted) error {
	sig := training.CheckpointCommitted{Epoch: c.Epoch, Rank: c.Rank, Step: c.Step, Emergency: c.Emergency}
	if err := r.Client.SignalWorkflow(ctx, jobID, "", training.SignalCheckpointCommitted, sig); err != nil {
		return fmt.Errorf("signalling committed step %d to %s: %w", c.Step, jobID, err)
	}
	return nil
}

// Notice signals a preemption notice (or a preemption seen on the machine).
func (r *Reporter) Notice(ctx context.Context, jobID string, n training.PreemptionNotice) error {
	sig := training.PreemptionNotice{InstanceID: n.InstanceID, Kind: cloud.InterruptionKind(n.Kind), Deadline: n.Deadline}
	if err := r.Client.SignalWorkflow(ctx, jobID, "", training.SignalPreemptionNotice, sig); err != nil {
		return fmt.Errorf("signalling a preemption %s of %s to %s: %w", n.Kind, n.InstanceID, jobID, err)
	}
	return nil
}
