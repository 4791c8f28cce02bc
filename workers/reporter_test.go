package workers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
)

// TestReporterSignalsTheJob checks each report becomes the job's signal, with the payload the
// workflow decodes, sent to the job id with an empty run id (the current run after
// continue-as-new).
func TestReporterSignalsTheJob(t *testing.T) {
	c := mocks.NewClient(t)
	ctx := context.Background()
	deadline := time.Date(2026, 1, 1, 0, 2, 0, 0, time.UTC)
	p := training.Progress{Epoch: 2, Rank: 1, InstanceID: "i-1", Iteration: 40, LastCheckpoint: 30}
	c.On("SignalWorkflow", mock.Anything, "train-x-1", "", training.SignalProgress, p).Return(nil).Once()
	c.On("SignalWorkflow", mock.Anything, "train-x-1", "", training.SignalCheckpointCommitted,
		training.CheckpointCommitted{Epoch: 2, Rank: 1, Step: 30, Emergency: true}).Return(nil).Once()
	c.On("SignalWorkflow", mock.Anything, "train-x-1", "", training.SignalPreemptionNotice,
		training.PreemptionNotice{InstanceID: "i-1", Kind: cloud.Notice, Deadline: deadline}).Return(nil).Once()

	r := NewReporter(c)
	require.NoError(t, r.Progress(ctx, "train-x-1", p))
	require.NoError(t, r.Committed(ctx, "train-x-1", training.CheckpointCommitted{Epoch: 2, Rank: 1, Step: 30, Emergency: true}))
	require.NoError(t, r.Notice(ctx, "train-x-1", training.PreemptionNotice{InstanceID: "i-1", Kind: cloud.Notice, Deadline: deadline}))

	c.On("SignalWorkflow", mock.Anything, "gone", "", training.SignalProgress, mock.Anything).Return(errors.New("workflow not found")).Once()
	err := r.Progress(ctx, "gone", p)
	require.ErrorContains(t, err, "signalling progress of rank 1 to gone: workflow not found")
}
