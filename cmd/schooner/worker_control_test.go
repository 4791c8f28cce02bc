//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud/catalog"
	"github.com/schooner-ml/schooner/devserver/stack"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers"
	"github.com/schooner-ml/schooner/workers/trainingclient"
)

// A standalone control worker with --cloud sim, beside `schooner dev`'s market (through its
// EC2 and Compute faces, the real SDKs), runs a job to its verified end: the path a cluster of
// separate worker processes takes.
func TestAStandaloneControlWorkerRunsJobs(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	s, err := stack.Start(ctx, stack.Options{DataDir: dir, Headless: true, Seed: 3, TimeScale: 120,
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	require.NoError(t, err)
	defer func() { _ = s.Stop(0) }()
	apis, err := serveSimAPIs(s.Market, "127.0.0.1:0", "127.0.0.1:0")
	require.NoError(t, err)
	defer apis.Close()
	s.Control.Stop() // only the standalone worker below serves the job activities

	f := controlJobFlags{cloud: cloudFlags{cloud: "sim", simEC2: strings.TrimPrefix(apis.ec2.Addr(), "http://"),
		simGCE: strings.TrimPrefix(apis.gce.Addr(), "http://"), awsRegions: catalog.KnownRegions("aws"), simScale: 120},
		storeRoots: []string{dir}}
	opts, _, err := f.options(ctx, zerolog.Nop())
	require.NoError(t, err)
	require.NotNil(t, opts.Training)
	w := workers.NewControlWorkerWith(s.Client, opts)
	require.NoError(t, w.Start())
	defer w.Stop()

	spec := training.Spec{
		Name: "standalone", Model: training.Model{Name: "OPT-350"}, GlobalBatch: 32, Iterations: 60,
		Resources:  training.Resources{Clouds: []string{"aws"}, GPUTypes: []string{"V100-16"}, MaxGPUs: 2},
		Spot:       training.SpotWithFallback,
		Checkpoint: training.Checkpoint{Every: 20, Store: (&url.URL{Scheme: "file", Path: filepath.Join(dir, "store")}).String()},
		Trainer:    training.Trainer{Kind: training.TrainerSim, Seed: 1},
	}.WithDefaults()
	id, err := s.Jobs.Submit(ctx, spec, trainingclient.SubmitOptions{})
	require.NoError(t, err)
	last := ""
	st, err := s.Jobs.Watch(ctx, id, 100*time.Millisecond, func(st training.JobStatus, _ error) {
		line := fmt.Sprintf("%s iter %d/%d gpus %v replans %d preemptions %d err %q", st.Phase, st.Iteration, st.Iterations, st.GPUs, st.Replans, st.Preemptions, st.Error)
		if line != last {
			t.Log(line)
			last = line
		}
	})
	require.NoError(t, err)
	require.Equal(t, training.PhaseCompleted, st.Phase, "job error: %s", st.Error)
	assert.True(t, st.StateVerified, st.VerifyError)
}

func TestAControlWorkerWithoutACloudServesWorkflowsOnly(t *testing.T) {
	opts, note, err := (&controlJobFlags{}).options(context.Background(), zerolog.Nop())
	require.NoError(t, err)
	assert.Nil(t, opts.Training)
	assert.Contains(t, note, "need a control worker with --cloud")
	_, _, err = (&controlJobFlags{cloud: cloudFlags{cloud: "azure"}}).options(context.Background(), zerolog.Nop())
	assert.ErrorContains(t, err, "want sim, aws, gcp or aws+gcp")
}
