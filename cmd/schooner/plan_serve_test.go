package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/planner/serve"
)

// servingOfferings writes A100-80 and T4 offerings in two zones to a file.
func servingOfferings(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "offerings.json")
	require.NoError(t, os.WriteFile(path, []byte(`[
		{"provider":"gcp","region":"us-central1","zone":"us-central1-a","instance_type":"a2-ultragpu-1g","gpu_type":"A100-80",
		 "gpus_per_instance":1,"spot_price":2.0,"on_demand_price":5.07,"spot_capacity":4},
		{"provider":"gcp","region":"us-central1","zone":"us-central1-b","instance_type":"a2-ultragpu-1g","gpu_type":"A100-80",
		 "gpus_per_instance":1,"spot_price":2.1,"on_demand_price":5.07,"spot_capacity":4},
		{"provider":"aws","region":"us-east-1","zone":"us-east-1a","instance_type":"g4dn.xlarge","gpu_type":"T4-16",
		 "gpus_per_instance":1,"spot_price":0.17,"on_demand_price":0.526,"spot_capacity":-1}
	]`), 0o600))
	return path
}

func runPlanServeCmd(args ...string) (string, error) {
	return executeFresh(newPlanServeCommand, args...)
}

func TestPlanServeTable(t *testing.T) {
	t.Parallel()
	path := servingOfferings(t)
	out, err := runPlanServeCmd("--model", "llama-3-8b", "--rate", "3", "--prompt", "1024", "--output", "128", "--offerings", path)
	require.NoError(t, err, out)
	for _, want := range []string{"LLAMA-3-8 at 3 requests/s", "RANK", "USD/1M TOK", "TTFT P50/P99", "TOK/S CAP", "UTIL",
		"on-demand", "The best, where to buy it:", "a2-ultragpu-1g", "Estimates from datasheets, not measurements"} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "Spot capacity may be reclaimed", "no spot without --spot")

	out, err = runPlanServeCmd("--model", "llama-3-8b", "--rate", "3", "--prompt", "1024", "--output", "128", "--offerings", path, "--spot")
	require.NoError(t, err, out)
	assert.Contains(t, out, " spot ")
	assert.Contains(t, out, "Spot capacity may be reclaimed")

	// the inference worker's own models are known too; --gpu keeps to the T4s
	out, err = runPlanServeCmd("--model", "llama-1b", "--rate", "1", "--offerings", path, "--gpu", "T4-16")
	require.NoError(t, err, out)
	assert.Contains(t, out, "T4-16")
	assert.NotContains(t, out, "A100-80")
}

func TestPlanServeJSON(t *testing.T) {
	t.Parallel()
	path := servingOfferings(t)
	out, err := runPlanServeCmd("--model", "LLAMA-3-8", "--rate", "2", "--prompt", "8192", "--output", "32",
		"--tpot", "40ms", "--offerings", path, "--gpu", "A100-80", "--json", "--top", "2", "--spot")
	require.NoError(t, err, out)
	var res serve.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.NotEmpty(t, res.Plans)
	assert.LessOrEqual(t, len(res.Plans), 2)
	best := res.Plans[0]
	assert.Equal(t, serve.Disaggregated, best.Mode, "long prompts, short outputs")
	assert.LessOrEqual(t, best.Simulated.TPOTP99, 0.040)
	assert.LessOrEqual(t, best.Simulated.TTFTP99, serve.DefaultTTFT.Seconds())
	assert.Positive(t, best.USDPerMTokens)
	assert.Equal(t, 0.5, res.Assumptions.ComputeEfficiency)
}

func TestPlanServeErrorsNameTheFlag(t *testing.T) {
	t.Parallel()
	path := servingOfferings(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rate", "1"}, "--model is required"},
		{[]string{"--model", "gpt-9", "--rate", "1"}, `unknown --model "gpt-9"`},
		{[]string{"--model", "OPT-350", "--rate", "0"}, "--rate must be positive"},
		{[]string{"--model", "OPT-350", "--rate", "1", "--prompt", "0"}, "--prompt must be positive"},
		{[]string{"--model", "OPT-350", "--rate", "1", "--prompt", "2000", "--output", "100"}, "more than OPT-350's 2048 learned positions"},
		{[]string{"--model", "OPT-350", "--rate", "1", "--gpu", "Z80"}, `unknown --gpu "Z80"`},
		{[]string{"--model", "OPT-350", "--rate", "1", "--gpu", "H100-80"}, "no offerings left after filtering"},
		{[]string{"--model", "OPT-350", "--rate", "1", "--spot", "--on-demand-only"}, "none of the others can be"},
		{[]string{"--model", "OPT-30", "--rate", "1", "--gpu", "T4-16", "--max-gpus", "2"}, "--model OPT-30: no offering fits OPT-30"},
		{[]string{"--model", "OPT-350", "--rate", "1", "--tpot", "0s"}, "--ttft and --tpot must be positive durations (p99 targets), got 2s and 0s"},
		{[]string{"--model", "OPT-350", "--rate", "1", "--ttft", "-1s"}, "--ttft and --tpot must be positive"},
		{[]string{"--model", "llama-3-8b", "--rate", "1", "--tpot", "1ns"}, "--tpot 1ns: the tpot target 1ns is out of reach"},
		{[]string{"--model", "llama-3-8b", "--rate", "1", "--tpot", "1ms"}, "--tpot 1ms: the tpot target 1ms is out of reach: the best achievable is"},
		{[]string{"--model", "llama-3-8b", "--rate", "1", "--prompt", "4096", "--ttft", "10ms"}, "--ttft 10ms: the ttft target 10ms is out of reach"},
		{[]string{"--model", "llama-3-8b", "--rate", "100000"}, "--rate 100000: the rate 1e+05 requests/s is out of reach within 64 GPUs"},
	} {
		args := append(tc.args, "--offerings", path)
		out, err := runPlanServeCmd(args...)
		assert.ErrorContains(t, err, tc.want, "%v: %s", tc.args, out)
	}
}

func TestPlanServeHelpTeaches(t *testing.T) {
	t.Parallel()
	out, err := runPlanServeCmd("--help")
	require.NoError(t, err)
	assert.Contains(t, out, "schooner plan serve --model llama-3-8b --rate 5 --prompt 512 --output 256 --spot")
	assert.Contains(t, out, "estimate from datasheets, not a measurement")
	assert.Contains(t, out, "--spot --write-spec llama.yaml\n  schooner serve deploy llama.yaml")
	for _, flag := range []string{"--rate", "--ttft", "--tpot", "--gpu", "--zone", "--region", "--spot", "--on-demand-only", "--max-gpus", "--offerings", "--top", "--json",
		"--write-spec", "--pick"} {
		assert.Contains(t, out, flag)
	}
	out, err = executeFresh(newPlanCommand, "--help")
	require.NoError(t, err)
	assert.Contains(t, out, "serve")
}
