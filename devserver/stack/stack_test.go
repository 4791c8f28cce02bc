package stack

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/devserver/pgtest"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers/trainingclient"
)

// TestStackRunsAJobAndStops is the whole stack once: a small job submitted, watched and
// listed through the typed client completes verified, and the stack stops within its bound.
func TestStackRunsAJobAndStops(t *testing.T) {
	runsAJobAndStops(t, "")
}

// On PostgreSQL the same: schooner's search attributes, the job's workflows and the
// visibility queries of the typed client work on Temporal's SQL visibility store too.
func TestStackRunsAJobOnPostgres(t *testing.T) {
	runsAJobAndStops(t, pgtest.Start(t).URL("stack"))
}

func runsAJobAndStops(t *testing.T, database string) {
	const scale = 120
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, err := Start(ctx, Options{DataDir: dir, Database: database, Headless: true, Seed: 3, TimeScale: scale,
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	require.NoError(t, err)
	defer func() { _ = s.Stop(0) }()

	spec := training.Spec{
		Name: "stack", Model: training.Model{Name: "OPT-350"}, GlobalBatch: 32, Iterations: 100,
		Resources:  training.Resources{Clouds: []string{"aws"}, GPUTypes: []string{"V100-16"}, MaxGPUs: 2},
		Spot:       training.SpotWithFallback,
		Checkpoint: training.Checkpoint{Every: 25, Store: (&url.URL{Scheme: "file", Path: filepath.Join(dir, "store")}).String()},
		Trainer:    training.Trainer{Kind: training.TrainerSim, Seed: 1},
	}.WithDefaults()
	require.NoError(t, spec.Validate())
	id, err := s.Jobs.Submit(ctx, spec, trainingclient.SubmitOptions{})
	require.NoError(t, err)
	readings := 0
	st, err := s.Jobs.Watch(ctx, id, 100*time.Millisecond, func(training.JobStatus, error) { readings++ })
	require.NoError(t, err)
	require.Equal(t, training.PhaseCompleted, st.Phase, "job error: %s", st.Error)
	assert.True(t, st.StateVerified, st.VerifyError)
	assert.Positive(t, readings)

	live, err := s.Market.List(ctx, map[string]string{cloud.JobTag: id})
	require.NoError(t, err)
	assert.Empty(t, live, "the job released its instances")

	// Visibility is eventually consistent: poll with a deadline.
	var jobs []trainingclient.JobSummary
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if jobs, err = s.Jobs.List(ctx, trainingclient.ListOptions{Query: "WorkflowId='" + id + "'"}); err == nil && len(jobs) == 1 && jobs[0].Status == "completed" {
			break
		}
	}
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	assert.Equal(t, "completed", jobs[0].Status)
	assert.Equal(t, training.PhaseCompleted, jobs[0].Phase)

	require.NoError(t, s.Stop(20*time.Second))
	require.NoError(t, s.Stop(time.Second), "a second Stop is a no-op")
}
