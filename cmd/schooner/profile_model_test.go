package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/profiles"
)

// tinyProfileJSON is what the profiler writes for a one-block model measured on an H200 at
// TP 1 and micro-batch sizes 1 and 2: every layer 1 ms forward and 2 ms backward per
// sample, so one microbatch through the three layers takes 9 ms per sample.
func tinyProfileJSON(t *testing.T, name string) []byte {
	t.Helper()
	arch := planner.Architecture{Name: name, Layers: 1, Hidden: 64, Heads: 4, FFN: 256, Vocab: 128, SeqLen: 32}
	lm := planner.LayerMem{ParamsFloats: 1e6, ActOutputFloats: 2048, ActInputFloats: 2048, ActMemFloats: 1e7}
	times := map[int][]planner.LayerTime{}
	for _, mbs := range []int{1, 2} {
		lt := planner.LayerTime{Fwd: float64(mbs) * 1e-3, Bwd: float64(mbs) * 2e-3, Update: 1e-4}
		times[mbs] = []planner.LayerTime{lt, lt, lt}
	}
	f := profiles.ModelFile{
		Format:       profiles.ModelFormat,
		Architecture: &arch,
		ModelProfile: planner.ModelProfile{
			Name: name, SeqLen: 32,
			Mem: map[int][]planner.LayerMem{1: {lm, lm, lm}},
			Compute: map[gpu.Type]*planner.Compute{gpu.H200: {GPU: gpu.H200, Source: "measured: fake",
				Times: map[int]map[int][]planner.LayerTime{1: times}}},
			MemoryModel: &planner.MemoryModel{BytesPerParam: 16, OverheadBytes: 1 << 30},
		},
	}
	data, err := json.Marshal(f)
	require.NoError(t, err)
	return data
}

// fakePython writes a shell script that stands in for python3: it records its arguments
// and PYTHONPATH in dir, says something on stdout and stderr, and then runs body (with
// $out set to the --out argument).
func fakePython(t *testing.T, dir, body string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake interpreter is a shell script")
	}
	script := fmt.Sprintf(`#!/bin/sh
printf '%%s\n' "$@" > %[1]s/args
printf '%%s\n' "$PYTHONPATH" > %[1]s/pythonpath
echo "profiling on a fake GPU"
echo "fake profiler warning" >&2
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--out" ]; then out="$2"; fi
  shift
done
%[2]s
`, dir, body)
	path := filepath.Join(dir, "python3")
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
	return path
}

// tinyProfiler is a fake python3 in a fresh directory (also returned) whose profiler writes
// tinyProfileJSON for tiny-gpt to --out.
func tinyProfiler(t *testing.T) (dir, python string) {
	t.Helper()
	dir = t.TempDir()
	src := filepath.Join(dir, "src.json")
	require.NoError(t, os.WriteFile(src, tinyProfileJSON(t, "tiny-gpt"), 0o644))
	return dir, fakePython(t, dir, `cp `+src+` "$out"`)
}

func runProfileModel(args ...string) (string, error) {
	cmd := newProfileCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"model"}, args...))
	err := cmd.Execute()
	return out.String(), err
}

var tinyDims = []string{"--name", "tiny-gpt", "--layers", "1", "--hidden", "64", "--heads", "4", "--ffn", "256",
	"--vocab", "128", "--seq-len", "32"}

func TestProfileModelRunsTheProfilerAndSummarises(t *testing.T) {
	t.Parallel()
	dir, python := tinyProfiler(t)
	out := filepath.Join(dir, "profiles", "tiny-gpt.json")
	require.NoError(t, os.Mkdir(filepath.Dir(out), 0o755))

	got, err := runProfileModel(append(tinyDims, "--mbs", "1,2", "--reps", "5", "--out", out,
		"--python", python, "--python-path", dir)...)
	require.NoError(t, err, got)

	args, err := os.ReadFile(filepath.Join(dir, "args"))
	require.NoError(t, err)
	assert.Equal(t, []string{"-m", "schooner_train.profile", "--name", "tiny-gpt", "--layers", "1", "--hidden", "64",
		"--heads", "4", "--ffn", "256", "--vocab", "128", "--seq-len", "32", "--mbs", "1,2", "--tp", "1",
		"--gpu-type", "H200-141", "--warmup", "1", "--reps", "5", "--out", out},
		strings.Split(strings.TrimSpace(string(args)), "\n"))
	pp, err := os.ReadFile(filepath.Join(dir, "pythonpath"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(pp), dir), "PYTHONPATH starts with --python-path: %s", pp)

	assert.Contains(t, got, "profiling on a fake GPU", "the profiler's stdout is streamed")
	assert.Contains(t, got, "fake profiler warning", "the profiler's stderr is streamed")
	assert.Contains(t, got, "1 transformer blocks, 3 planner layers")
	assert.Regexp(t, `GPU\s+H200-141 \(measured\)\nsource\s+measured: fake\n`, got)
	assert.Regexp(t, `TP degrees\s+1\n`, got)
	assert.Regexp(t, `micro-batch sizes\s+1,2\n`, got)
	assert.Contains(t, got, "16.0 bytes per parameter, 1.00 GiB overhead per GPU (measured)")
	// 3 layers × (1 + 2) ms × mbs; peak = 3e6 params × 16 B + 3e7 floats × 4 B × mbs + 1 GiB:
	// 1 GiB + 168 MB (1.16 GiB) at mbs 1, + 288 MB (1.27 GiB) at mbs 2.
	assert.Regexp(t, `1\s+1\s+9\.0 ms\s+9\.0 ms\s+300 µs\s+1\.16 GiB\n`, got)
	assert.Regexp(t, `1\s+2\s+18\.0 ms\s+9\.0 ms\s+300 µs\s+1\.27 GiB\n`, got)
	assert.NotContains(t, got, "not measured")
}

func TestProfileModelSaysWhatTheProfilerLeftOut(t *testing.T) {
	t.Parallel()
	dir, python := tinyProfiler(t)
	got, err := runProfileModel(append(tinyDims, "--mbs", "1,2,4", "--out", filepath.Join(dir, "p.json"),
		"--python", python, "--python-path", dir)...)
	require.NoError(t, err, got)
	assert.Contains(t, got, "note: not measured (the profiler left them out, e.g. out of memory): TP 1 mbs 4")
}

func TestProfileModelResolvesABuiltinModel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	python := fakePython(t, dir, `exit 1`)
	_, err := runProfileModel("--model", "OPT-350M", "--out", filepath.Join(dir, "o.json"), "--python", python, "--python-path", dir)
	require.Error(t, err)
	args, rerr := os.ReadFile(filepath.Join(dir, "args"))
	require.NoError(t, rerr)
	assert.Contains(t, string(args), "--name\nOPT-350\n--layers\n24\n--hidden\n1024\n--heads\n16\n--ffn\n4096\n--vocab\n50272\n--seq-len\n2048\n--mbs\n1,2,4\n")
}

func TestProfileModelFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "p.json")
	failing := fakePython(t, t.TempDir(), `echo "no CUDA GPU: the profiler measures a GPU and needs one" >&2; exit 3`)
	broken := fakePython(t, t.TempDir(), `echo '{"format": "schooner.model-profile/v1",' > "$out"`)
	silent := fakePython(t, t.TempDir(), `exit 0`)
	wrongGPU := filepath.Join(dir, "wrong.json")
	require.NoError(t, os.WriteFile(wrongGPU, bytes.Replace(tinyProfileJSON(t, "tiny-gpt"), []byte("H200-141"), []byte("A100-40"), -1), 0o644))
	otherGPU := fakePython(t, t.TempDir(), `cp `+wrongGPU+` "$out"`)

	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"profiler fails", append(tinyDims, "--out", out, "--python", failing),
			[]string{"the profiler (" + failing + " -m schooner_train.profile) failed with exit code 3", "no CUDA GPU"}},
		{"python missing", append(tinyDims, "--out", out, "--python", filepath.Join(dir, "no-such-python")),
			[]string{"finding the Python interpreter", "needs Python 3 with PyTorch"}},
		{"output not loadable", append(tinyDims, "--out", out, "--python", broken),
			[]string{"checking the profile the profiler wrote", out, "malformed JSON"}},
		{"nothing written", append(tinyDims, "--out", filepath.Join(dir, "none.json"), "--python", silent),
			[]string{"exited successfully but wrote no", "none.json"}},
		{"another GPU measured", append(tinyDims, "--out", filepath.Join(dir, "other.json"), "--python", otherGPU),
			[]string{"has no compute for H200-141", "it has A100-40"}},
		{"model and dimensions", []string{"--model", "OPT-350", "--layers", "2"}, []string{"--model and --layers cannot be used together"}},
		{"missing dimension", []string{"--name", "x", "--layers", "2"}, []string{"give --model", "--hidden"}},
		{"unknown model", []string{"--model", "GPT-5"}, []string{`unknown --model "GPT-5"`, "OPT-350"}},
		{"unknown GPU", append(tinyDims, "--gpu-type", "H200"), []string{`unknown --gpu-type "H200"`, "H200-141"}},
		{"TP does not divide", append(tinyDims, "--tp", "1,3"), []string{"--tp 3 does not divide tiny-gpt"}},
		{"bad micro-batch", append(tinyDims, "--mbs", "0"), []string{"--mbs values must be positive"}},
		{"bad dimensions", []string{"--name", "x", "--layers", "1", "--hidden", "65", "--heads", "4", "--ffn", "256",
			"--vocab", "128", "--seq-len", "32"}, []string{"hidden 65 is not a multiple of heads 4"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := runProfileModel(append(c.args, "--python-path", dir)...)
			require.Error(t, err, got)
			for _, w := range c.want {
				assert.Contains(t, err.Error()+got, w)
			}
		})
	}
}

func TestProfileModelRefusesAStaleFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "tiny-gpt.json")
	require.NoError(t, os.WriteFile(out, tinyProfileJSON(t, "tiny-gpt"), 0o644))
	python := fakePython(t, dir, `exit 0`)
	_, err := runProfileModel(append(tinyDims, "--out", out, "--python", python, "--python-path", dir)...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did not rewrite "+out)
}
