package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/training"
)

func TestLoadSpecPrintsEveryProblem(t *testing.T) {
	path := specFile(t, "name: Bad_Name\nmodel: {name: nope}\nglobal_batch: 0\niterations: 10\ncheckpoint: {every: 0, store: gs://x}\nspot: cheap\n")
	var errOut bytes.Buffer
	_, err := loadSpec(path, &errOut)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nothing started")
	for _, field := range []string{"name:", "model.name:", "global_batch:", "checkpoint.every:", "checkpoint.store:", "spot:"} {
		assert.Contains(t, errOut.String(), "  "+field, "every problem is printed")
	}
}

func TestLoadSpecCountsOneProblemInTheSingular(t *testing.T) {
	demo, err := os.ReadFile(filepath.Join("..", "..", "examples", "demo.yaml"))
	require.NoError(t, err)
	path := specFile(t, strings.Replace(string(demo), "spot: spot-with-fallback", "spot: cheap", 1))
	_, err = loadSpec(path, &bytes.Buffer{})
	require.Error(t, err)
	assert.ErrorContains(t, err, ": 1 problem, nothing started")
}

func TestLoadSpecAcceptsTheExamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	require.NoError(t, err)
	// serve-*.yaml are serving deployments, not training jobs.
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasPrefix(filepath.Base(f), "serve-") })
	require.NotEmpty(t, files)
	for _, f := range files {
		spec, err := loadSpec(f, os.Stderr)
		require.NoError(t, err, f)
		assert.NotEmpty(t, spec.Trainer.Kind, "defaults applied")
	}
}

func viewStatus() training.JobStatus {
	return training.JobStatus{
		JobID: "train-demo-abc123", Phase: training.PhaseTraining, Iteration: 150, Iterations: 600, Epoch: 2,
		GPUs:    map[string]int{"aws/us-west-2a/V100-16(spot)": 4, "aws/us-east-2b/V100-16(spot)": 2, "aws/x/none": 0},
		Zones:   []string{"us-east-2b", "us-west-2a"},
		CostUSD: 1.5, USDPerHour: 7.5, HoldingOnDemandCostUSD: 4, Preemptions: 1, Replans: 1, LastCheckpoint: 125,
		BestOnDemandCostUSD: 10, BestOnDemandPlan: "P=1 D=4, 1.000 s/iter, $12.24/h",
		Plans: []training.PlanRecord{{Epoch: 2, Reason: "preemption", Summary: "P=2 D=1"}},
	}
}

func TestRenderView(t *testing.T) {
	out := strings.Join(renderView(viewStatus()), "\n")
	assert.Contains(t, out, "phase TRAINING")
	assert.Contains(t, out, "iteration 150/600  ")
	assert.Contains(t, out, strings.Repeat("█", 8)+strings.Repeat("░", 24), "a quarter of the bar")
	assert.Contains(t, out, " 25.0%")
	assert.Contains(t, out, "GPUs 6:")
	assert.Contains(t, out, "aws us-east-2b V100-16(spot)")
	assert.NotContains(t, out, "aws x none", "empty holdings are not listed")
	assert.Contains(t, out, "$1.50 so far, $7.50/h now; the whole job on its best on-demand plan: $10.00 (P=1 D=4, 1.000 s/iter, $12.24/h)")
	assert.Contains(t, out, "the same machines at on-demand prices: $4.00")
	assert.NotContains(t, out, "on-demand would be", "the same machines on demand are not what on-demand would cost")
	assert.Contains(t, out, "preemptions survived 1")
	assert.Contains(t, out, "last checkpoint step 125")
	assert.Contains(t, out, "plan (epoch 2, preemption): P=2 D=1")
}

// The status says what the job saved against its baseline, the whole job on its best
// on-demand plan, once it is done; and lists what it bought on demand, at what price, why.
func TestStatusComparesWithTheBestOnDemandPlan(t *testing.T) {
	st := viewStatus()
	st.Phase, st.CostUSD = training.PhaseCompleted, 3
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	st.OnDemandPurchases = []training.OnDemandPurchase{
		{At: t0, GPUs: 4, Zones: map[string]int{"us-west-2a": 4}, Why: "spot short: the deadline needs 4", USDPerHour: 12.24},
		{At: t0.Add(time.Hour), GPUs: 1, Zones: map[string]int{"us-west-2a": 5}, Why: "recorded before"}}
	out := strings.Join(renderView(st), "\n")
	assert.Contains(t, out, "cost $3.00: 70.0% saved against the job on its best on-demand plan ($10.00: P=1 D=4")
	assert.Contains(t, out, "on-demand purchases 2, the last:")
	assert.Contains(t, out, "10:00:00 +4 GPUs (us-west-2a: 4), $12.24/h: spot short: the deadline needs 4")
	assert.Contains(t, out, "11:00:00 +1 GPUs (us-west-2a: 5), price not recorded: recorded before")

	st.BestOnDemandCostUSD = 0
	out = strings.Join(renderView(st), "\n")
	assert.Contains(t, out, "cost $3.00 so far, $7.50/h now (no best on-demand plan to compare with)")
}

func TestPlainLinesOnlyOnChange(t *testing.T) {
	var buf bytes.Buffer
	v := &liveView{out: &buf}
	st := viewStatus()
	v.show(st)
	v.show(st)
	st.Iteration = 175
	v.show(st)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, "train-demo-abc123 phase=training iter=150/600 gpus=6 zones=us-east-2b,us-west-2a cost=$1.50 usd/h=7.50 preemptions=1 replans=1 checkpoint=step 125", lines[0])
	assert.NotContains(t, buf.String(), "\x1b[", "no escape codes when not a terminal")
}

func TestTTYViewRedrawsInPlace(t *testing.T) {
	var buf bytes.Buffer
	v := &liveView{out: &buf, tty: true}
	v.show(viewStatus())
	first := buf.Len()
	v.show(viewStatus())
	assert.True(t, strings.HasPrefix(buf.String()[first:], "\x1b["), "the second frame moves the cursor back up first")
}

func TestJobOutcome(t *testing.T) {
	require.NoError(t, jobOutcome(training.JobStatus{Phase: training.PhaseCompleted}))
	err := jobOutcome(training.JobStatus{JobID: "j", Phase: training.PhaseFailed, Error: "budget exhausted"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "budget exhausted")
	require.Error(t, jobOutcome(training.JobStatus{}))
}

func TestProgressPct(t *testing.T) {
	assert.Equal(t, 50.0, progressPct(0.5))
	assert.Equal(t, 42.0, progressPct(42))
}

func TestMoneyNeverReadsAsNothing(t *testing.T) {
	assert.Equal(t, "$0.0001", usd(0.0001))
	assert.Equal(t, "$0.8312", usd(0.83123))
	assert.Equal(t, "$176.43", usd(176.4321))
	assert.Equal(t, "$0.00", usd(0))
}

func TestAStaleStatusSaysSo(t *testing.T) {
	st := training.JobStatus{JobID: "j", Phase: training.PhaseTraining, Stale: true}
	assert.Contains(t, strings.Join(renderView(st), "\n"), "STALE")
	assert.Contains(t, plainLine(st), "stale=true")
}

// A valid spec whose fallback has no deadline to keep starts (or passes --dry-run) with a note
// that it will not fall back; one with a deadline gets none.
func TestSubmitNotesAFallbackWithoutADeadline(t *testing.T) {
	spec := "name: fb\nmodel:\n  name: OPT-350\nglobal_batch: 32\niterations: 100\nspot: spot-with-fallback\n" +
		"checkpoint:\n  every: 50\n  store: file:///tmp/schooner-demo/store\n"
	path := specFile(t, spec)
	out, err := executeFresh(newTrainSubmitCommand, "--dry-run", path)
	require.NoError(t, err)
	assert.Contains(t, out, "note: spot: spot-with-fallback without a deadline buys no on-demand capacity")
	assert.Contains(t, out, "is valid")

	require.NoError(t, os.WriteFile(path, []byte(spec+"deadline: 24h\n"), 0o644))
	out, err = executeFresh(newTrainSubmitCommand, "--dry-run", path)
	require.NoError(t, err)
	assert.NotContains(t, out, "note:")
}

// specFile writes a spec's text to a file of a test's own and returns its path.
func specFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}
