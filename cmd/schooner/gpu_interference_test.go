package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gi "github.com/schooner-ml/schooner/gpu/interference"
	"github.com/schooner-ml/schooner/gpu/interference/fake"
	"github.com/schooner-ml/schooner/interference"
)

func TestGPUInterferenceShowPrintsTheTableAndDrawsThePlot(t *testing.T) {
	dir := t.TempDir()
	req := interference.StudyRequest{Pairs: []interference.Pair{{LC: "decode-chain", BE: "gemm"}},
		Mechanisms: []interference.Mechanism{{Kind: interference.Streams}, {Kind: interference.MPS, Setting: 50}, {Kind: interference.MIG}}}
	st, err := gi.RunStudy(context.Background(), fake.New(), req, nil)
	require.NoError(t, err)
	path := filepath.Join(dir, "study.json")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, st.Encode(f))
	require.NoError(t, f.Close())

	svg := filepath.Join(dir, "front.svg")
	out, err := executeFresh(newGPUInterferenceCommand, "show", path, "--svg", svg)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, "SIMULATED"), "a model's study is marked: %s", out)
	assert.Contains(t, out, "decode-chain + gemm")
	assert.Contains(t, out, "mps-50")
	assert.Contains(t, out, "mig: MIG is disabled on this GPU")
	assert.Contains(t, out, "plot: "+svg)
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.Contains(t, string(b), "<svg")

	out, err = executeFresh(newGPUInterferenceCommand, "show", path, "--json")
	require.NoError(t, err)
	assert.Contains(t, out, `"be_throughput_fraction"`)

	require.NoError(t, os.WriteFile(path, []byte(`{"version":7,"gpu":{"model":"x"}}`), 0o644))
	_, err = executeFresh(newGPUInterferenceCommand, "show", path)
	require.ErrorContains(t, err, "version 7: this build reads versions 1 to 4")
	_, err = executeFresh(newGPUInterferenceCommand, "show", filepath.Join(dir, "none.json"))
	require.ErrorContains(t, err, "no such file")
}

// stopAfterCalls is the fake GPU whose study is interrupted (its context cancelled, as Ctrl-C
// or a timeout's SIGTERM does) once it has answered n runs.
type stopAfterCalls struct {
	*fake.Executor
	n      int
	cancel context.CancelFunc
}

func (s stopAfterCalls) Alone(ctx context.Context, w interference.Workload, req interference.StudyRequest) (interference.Run, error) {
	defer s.stopAtN()
	return s.Executor.Alone(ctx, w, req)
}

func (s stopAfterCalls) Shared(ctx context.Context, p interference.Pair, m interference.Mechanism, req interference.StudyRequest) (interference.Run, error) {
	defer s.stopAtN()
	return s.Executor.Shared(ctx, p, m, req)
}

func (s stopAfterCalls) stopAtN() {
	if s.Executor.Calls == s.n {
		s.cancel()
	}
}

func TestGPUInterferenceLocalStudySavesWhatFinishedAndResumesTheRest(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr strings.Builder
	l := localStudy{dir: dir, node: "gpu-box", again: "schooner gpu interference run --local --out " + dir + " --resume",
		stdout: &stdout, stderr: &stderr}
	path := filepath.Join(dir, "gpu-box.json")
	// decode-chain and gemm alone, decode-chain alone in a process of its own (the MPS row's
	// baseline), the pair under streams and MPS (MIG refused): 5 steps.
	req := interference.StudyRequest{Pairs: []interference.Pair{{LC: "decode-chain", BE: "gemm"}},
		Mechanisms: []interference.Mechanism{{Kind: interference.Streams}, {Kind: interference.MPS, Setting: 50}, {Kind: interference.MIG}},
		Requests:   50, Repeats: 1}

	x := fake.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := l.run(ctx, stopAfterCalls{Executor: x, n: 4, cancel: cancel}, req)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "the study stopped after 4 of 5 steps")
	assert.Contains(t, stderr.String(), "stopped: 4 of 5 steps done, saved in "+path+"; continue the study with\n  "+l.again+"\n")
	partial, err := interference.ReadFile(path)
	require.NoError(t, err, "the interrupted study's file is a valid study")
	assert.True(t, partial.Partial())
	assert.Equal(t, "gpu-box", partial.Node)
	assert.Equal(t, 4, partial.StepsDone())
	require.Len(t, partial.Missing, 1)
	assert.Equal(t, "decode-chain + gemm under mps-50", partial.Missing[0].String())
	assert.Contains(t, stdout.String(), "PARTIAL: 4 of 5 steps measured")
	assert.FileExists(t, filepath.Join(dir, "gpu-box.svg"))

	// Run again without --resume, it would overwrite the steps measured: refused.
	err = l.run(context.Background(), x, req)
	require.ErrorContains(t, err, path+" holds a partial study (4 of 5 steps): continue it with --resume, or give another --out")

	// Another request count measures another way: refused, naming it.
	l.resume = true
	other := req
	other.Requests = 60
	err = l.run(context.Background(), x, other)
	require.ErrorContains(t, err, "--resume: "+path+": the earlier study cannot be continued: requests 50 then, 60 now (to measure it anew, give another --out)")

	// --resume runs the missing step only; the study is the one an uninterrupted run makes.
	stderr.Reset()
	calls := x.Calls
	require.NoError(t, l.run(context.Background(), x, req))
	assert.Equal(t, 1, x.Calls-calls, "one step of one repeat was missing")
	assert.Contains(t, stderr.String(), "kept 4 of 5 steps from the earlier study in "+path+"; running the other 1\n[5/5] decode-chain + gemm under mps-50\n")
	done, err := interference.ReadFile(path)
	require.NoError(t, err)
	assert.False(t, done.Partial())
	whole, err := gi.RunStudy(context.Background(), fake.New(), req, nil)
	require.NoError(t, err)
	assert.Equal(t, whole.Runs, done.Runs)
	assert.Equal(t, whole.Unavailable, done.Unavailable)
	assert.True(t, partial.StartedAt.Equal(done.StartedAt), "the study started with its first run")

	// The first run of a repeated command with --resume finds no study and starts one.
	stderr.Reset()
	l.dir = filepath.Join(dir, "fresh")
	require.NoError(t, l.run(context.Background(), fake.New(), req))
	assert.Contains(t, stderr.String(), "no earlier study in "+filepath.Join(dir, "fresh", "gpu-box.json")+": starting one")
}

func TestGPUInterferenceRunTellsHowToContinue(t *testing.T) {
	assert.Equal(t, "schooner gpu interference run --local --out 'my results' --pair decode-chain+gemm --resume",
		againWithResume([]string{"/usr/local/bin/schooner", "gpu", "interference", "run", "--local", "--out", "my results", "--pair", "decode-chain+gemm"}))
	assert.Equal(t, "schooner gpu interference run --local --resume",
		againWithResume([]string{"schooner", "gpu", "interference", "run", "--local", "--resume"}))

	_, err := executeFresh(newGPUInterferenceCommand, "run", "--resume")
	require.ErrorContains(t, err, "--resume continues a --local study")
}
