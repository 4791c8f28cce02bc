// Package cluster tests schooner run as a cluster of separate processes of the built binary:
// PostgreSQL, the Temporal server, the simulated market, two control workers and a node agent
// per simulated instance, with one SIGKILL each of the server, a control worker and a node
// agent at random points while several training jobs run.
package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/devserver/pgtest"
	trainsim "github.com/schooner-ml/schooner/trainer/sim"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers/trainingclient"
)

// Every job runs, and every kill has struck, well within this; a run past it is stuck.
const jobsDeadline = 3 * time.Minute

// Three jobs run at once on the processes while the server, a control worker and a node agent
// are each SIGKILLed once at a random point and started again: every job completes with its
// final state verified bit for bit against an uninterrupted run, no instance is left running,
// and no process dies on its own. SCHOONER_CLUSTER_SEED=<seed> chooses the same kill points
// (and the same process to kill) again.
func TestClusterSurvivesKilledProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster of processes for about two minutes: run without -short")
	}
	began := time.Now()
	pg := pgtest.Start(t) // skips the test where PostgreSQL is not installed
	bin := buildBinary(t, t.TempDir())
	built := time.Now()
	c := newCluster(t, bin, pg.URL("schooner_cluster"), 2)
	up := time.Now()
	t.Logf("built the binary in %s; PostgreSQL, market, server and 2 control workers up in %s",
		built.Sub(began).Round(100*time.Millisecond), up.Sub(built).Round(100*time.Millisecond))

	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SCHOONER_CLUSTER_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "SCHOONER_CLUSTER_SEED")
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	faults := planFaults(rng)
	t.Logf("seed %d (SCHOONER_CLUSTER_SEED=%d kills at the same points): kills %s", seed, seed, describe(faults))

	ctx, cancel := context.WithTimeout(context.Background(), jobsDeadline)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // the followers stop before the processes do
	nodes := newNodeAgents(c)
	t.Cleanup(func() {
		if err := nodes.lastErr(); err != nil && t.Failed() {
			t.Logf("node agents: last failure to list instances or start an agent: %v", err)
		}
	})
	wg.Add(1)
	go func() { defer wg.Done(); nodes.follow(ctx, 200*time.Millisecond) }()

	specs := map[string]training.Spec{}
	storeURL := (&url.URL{Scheme: "file", Path: filepath.Join(c.dir, "store")}).String()
	for i, iterations := range []int64{60, 80, 100} {
		id := fmt.Sprintf("cluster-%d", i+1)
		specs[id] = jobSpec(id, iterations, int64(11+i), storeURL)
		_, err := c.jobs.Submit(ctx, specs[id], trainingclient.SubmitOptions{ID: id,
			// Short timeouts, so a killed agent or a lost machine is noticed in seconds.
			Options: training.JobOptions{HeartbeatTimeout: 3 * time.Second, PollInterval: time.Second, RetryWait: time.Second}})
		require.NoError(t, err)
	}
	prog := newProgress(c, specs)
	wg.Add(1)
	go func() { defer wg.Done(); prog.follow(ctx, 250*time.Millisecond) }()

	for _, f := range faults {
		require.NoError(t, c.strike(ctx, f, rng, prog, nodes))
	}
	final := waitClosed(t, ctx, c, prog, specs)
	took := time.Since(up)

	for id, spec := range specs {
		st := final[id]
		t.Logf("%s: %s at %d/%d, verified %v, %d preemptions, %d replans, %d restores, $%.2f",
			id, st.Phase, st.Iteration, spec.Iterations, st.StateVerified, st.Preemptions, st.Replans, st.Restores, st.CostUSD)
		requireVerified(t, ctx, spec, st)
		live, err := c.cloud.List(ctx, map[string]string{cloud.JobTag: id})
		require.NoError(t, err)
		assert.Empty(t, live, "instances still running for %s", id)
	}
	assert.Empty(t, c.unexpectedExits(), "processes that died without being killed")
	booted, lost, respawned := nodes.counts()
	t.Logf("node agents: %d booted with their instances, %d killed with them, %d started again after exiting by themselves; %d notices heard from the machines' metadata",
		booted, lost, respawned, c.logLines("node-", "preemption notice on this machine"))
	t.Logf("jobs and kills took %s; the whole test %s", took.Round(100*time.Millisecond), time.Since(began).Round(100*time.Millisecond))
}

// jobSpec is a small demo-shaped job: OPT-350 on at most two spot V100s in the traced zones,
// checkpointed every 10 iterations.
func jobSpec(name string, iterations, seed int64, store string) training.Spec {
	return training.Spec{
		Name: name, Model: training.Model{Name: "OPT-350"}, GlobalBatch: 32, Iterations: iterations,
		Resources: training.Resources{Clouds: []string{"aws"}, Zones: []string{"us-east-2b", "us-west-2a", "us-west-2c"},
			GPUTypes: []string{"V100-16"}, MaxGPUs: 2},
		Spot:       training.SpotWithFallback,
		Checkpoint: training.Checkpoint{Every: 10, Store: store},
		Trainer:    training.Trainer{Kind: training.TrainerSim, Seed: seed},
	}.WithDefaults()
}

// waitClosed waits until every job's workflow has ended and returns each one's result.
func waitClosed(t *testing.T, ctx context.Context, c *cluster, prog *progress, specs map[string]training.Spec) map[string]training.JobStatus {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !prog.allClosed() {
		select {
		case <-ctx.Done():
			for id := range specs {
				st, err := c.jobs.Status(context.Background(), id)
				t.Logf("%s: %s at %d, %d preemptions, %d replans, error %q (status read: %v)", id, st.Phase, st.Iteration, st.Preemptions, st.Replans, st.Error, err)
			}
			t.Fatalf("the jobs did not all end within %s", jobsDeadline)
		case <-tick.C:
		}
	}
	final := map[string]training.JobStatus{}
	for id := range specs {
		st, err := c.jobs.Result(ctx, id)
		require.NoError(t, err, "job %s", id)
		final[id] = st
	}
	return final
}

// requireVerified checks the job completed and, independently of what it reported, that its
// final durable step equals an uninterrupted run's.
func requireVerified(t *testing.T, ctx context.Context, spec training.Spec, st training.JobStatus) {
	t.Helper()
	require.Equal(t, training.PhaseCompleted, st.Phase, "job error: %s", st.Error)
	require.Equal(t, spec.Iterations, st.Iteration)
	require.True(t, st.StateVerified, "the job's own verification: %s", st.VerifyError)
	require.NotEmpty(t, st.Plans)
	stages := st.Plans[len(st.Plans)-1].Plan.Stages
	layers := stages[len(stages)-1].LastLayer + 1
	s, err := store.Open(ctx, st.CheckpointStore)
	require.NoError(t, err)
	require.NoError(t, trainsim.VerifyStep(ctx, &checkpoint.Remote{Store: s}, spec.Iterations, spec.Trainer.Seed, layers))
}

// describe says what the faults kill and when.
func describe(faults []fault) string {
	out := ""
	for i, f := range faults {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s at %.0f%%", f.what, 100*f.at)
	}
	return out
}
