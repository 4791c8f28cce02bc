package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/training"
)

// TestABadSpecStartedWithThePlainTemporalCLIFailsAtOnce starts a TrainingJob the way
// `temporal workflow start --input '{...}'` does (raw JSON, no schooner client, no
// validation on the way): the workflow refuses it before anything is bought, naming every
// bad field, and says so in its status.
func TestABadSpecStartedWithThePlainTemporalCLIFailsAtOnce(t *testing.T) {
	te := startTraining(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := "train-bad-cli01"
	input := map[string]any{
		"spec": map[string]any{
			"name": "bad", "model": map[string]any{"name": "OPT-350"}, "global_batch": 32, "iterations": -5,
			"resources":  map[string]any{"clouds": []string{"aws"}, "gpu_types": []string{"V100-16"}},
			"checkpoint": map[string]any{"every": 10, "store": "http://example.com/ckpt"},
			"trainer":    map[string]any{"kind": "pytorch"},
		},
		"submitted_at": time.Now().UTC().Format(time.RFC3339),
	}
	began := time.Now()
	run, err := te.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: taskqueue.Control}, training.WorkflowTrainingJob, input)
	require.NoError(t, err)
	err = run.Get(ctx, nil)
	require.Error(t, err)
	assert.Less(t, time.Since(began), 5*time.Second, "refused at once, not after waiting for capacity")
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	assert.Equal(t, training.ErrTypeInvalidSpec, app.Type())
	for _, field := range []string{"iterations", "checkpoint.store", "trainer.kind"} {
		assert.Contains(t, err.Error(), field)
	}
	live, lerr := te.Market.List(ctx, map[string]string{cloud.JobTag: id})
	require.NoError(t, lerr)
	assert.Empty(t, live, "nothing was bought")

	st, err := te.Jobs.Status(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, training.PhaseFailed, st.Phase)
	assert.Contains(t, st.Error, "iterations")
	assert.Zero(t, st.CostUSD)
}

// TestAJobNeverAdoptsAnotherJobsCheckpoints runs a job to the end, then a second job under the
// same id and the same store URL with another seed (what the probe did): the second trains
// from scratch in its own namespace and its final state verifies, instead of "completing" at
// once on the first job's final step.
func TestAJobNeverAdoptsAnotherJobsCheckpoints(t *testing.T) {
	te := startTraining(t)
	ctx, cancel := context.WithTimeout(context.Background(), 110*time.Second)
	defer cancel()
	id := "train-shared-store01"
	first := te.spec("shared", jobIterations)
	te.submit(ctx, id, first)
	st1 := te.waitClosed(ctx, id, 50*time.Second)
	te.requireVerified(ctx, first, st1)

	second := first
	second.Trainer.Seed = first.Trainer.Seed + 1
	te.submit(ctx, id, second)
	st2 := te.waitClosed(ctx, id, 50*time.Second)
	te.requireVerified(ctx, second, st2)
	assert.NotEqual(t, st1.CheckpointStore, st2.CheckpointStore, "each run of a job id has its own namespace")
	require.NotEmpty(t, st2.Plans)
	assert.Equal(t, int64(-1), st2.Plans[0].FromStep, "the second job starts from nothing")
	assert.Greater(t, st2.CheckpointsCommitted, 0, "and trains")
	te.requireNoLeak(ctx, id)
}
