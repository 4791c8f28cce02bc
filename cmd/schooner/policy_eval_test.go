package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/policy"
)

func TestPolicyEvalPrintsATablePerDeadline(t *testing.T) {
	out, err := execute(newPolicyCommand(), "eval", "--starts", "4", "--iterations", "1200",
		"--deadlines", "1.5x,20h", "--policies", "schooner-deadline,all-on-demand")
	require.NoError(t, err, out)
	assert.Contains(t, out, "trace bundled aws-08-27-2023: 3 zones")
	assert.Contains(t, out, "deadline 1.5x")
	assert.Contains(t, out, "schooner-deadline")
	assert.Contains(t, out, "simulated 16 of 16 runs")
	assert.NotContains(t, out, "cant-be-late-uniform", "--policies picks")
	assert.Regexp(t, `omniscient bound +█* *\| +0\.\d\d +0\.\d\d +100%`, out, "the bound's row, every start feasible")
}

func TestPolicyEvalTakesTheJobFromASpecAndWritesEveryRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.json")
	out, err := execute(newPolicyCommand(), "eval", "--spec", "../../examples/demo.yaml", "--starts", "3",
		"--deadlines", "2x", "--json", "--out", path)
	require.NoError(t, err, out)
	var res policy.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res), "stdout is the JSON alone")
	assert.Len(t, res.Runs, 3*len(policy.Makers()))
	saved, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.JSONEq(t, out, string(saved))
	// The demo spec: 600 iterations of OPT-350 on at most 8 GPUs in three zones.
	assert.InDelta(t, 0.7, res.SpotOnly.Hours(), 0.1)
}

// A spec written only to be evaluated need not name a checkpoint store (the simulator keeps no
// checkpoints), but every other field is still checked.
func TestPolicyEvalTakesASpecWithoutACheckpointStore(t *testing.T) {
	spec := "name: eval-only\nmodel: {name: OPT-350}\niterations: 600\nglobal_batch: 32\n" +
		"resources: {max_gpus: 8}\ncheckpoint: {every: 50}\n"
	path := specFile(t, spec)
	out, err := execute(newPolicyCommand(), "eval", "--spec", path, "--starts", "2", "--deadlines", "2x",
		"--policies", "schooner-deadline")
	require.NoError(t, err, out)
	assert.Contains(t, out, "schooner-deadline")

	bad := specFile(t, strings.Replace(spec, "iterations: 600", "iterations: -5", 1))
	out, err = execute(newPolicyCommand(), "eval", "--spec", bad, "--starts", "2")
	require.Error(t, err, out)
	assert.Contains(t, out+err.Error(), "iterations")
	assert.NotContains(t, out+err.Error(), "checkpoint.store")
}

func TestPolicyEvalNamesTheFileAndLineOfAMalformedTrace(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "us-east-2b_v100_1.json"),
		[]byte("{\"metadata\":{\"gap_seconds\":300},\n\"data\":[1,2,}"), 0o644))
	_, err := execute(newPolicyCommand(), "eval", "--trace", dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "us-east-2b_v100_1.json")
	assert.Contains(t, err.Error(), "line 2")
}

func TestPolicyEvalRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--policies", "greedy"}, `unknown policy "greedy"`},
		{[]string{"--deadlines", "soon"}, `deadline "soon"`},
		{[]string{"--zones", "eu-west-1a"}, `no trace of zone "eu-west-1a"`},
		{[]string{"--starts", "0"}, "--starts must be positive"},
		{[]string{"--model", "GPT-5"}, "GPT-5"},
	} {
		_, err := execute(newPolicyCommand(), append([]string{"eval"}, tc.args...)...)
		assert.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}

// A directory of the public traces' two V100 shapes needs a choice; with one, a policy none of
// whose runs could finish (SkyPilot's cluster of two in one zone, on zones of one machine each)
// shows no cost rather than the cheapest one.
func TestPolicyEvalChoosesAnInstanceTypeAndShowsNoCostForRunsThatNeverFinish(t *testing.T) {
	dir := t.TempDir()
	ones := "[1" + strings.Repeat(",1", 299) + "]"
	for _, name := range []string{"us-west-2a_v100_1.json", "us-west-2b_v100_1.json", "us-west-2a_v100_8.json"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(`{"metadata":{"gap_seconds":600},"data":`+ones+`}`), 0o644))
	}
	_, err := execute(newPolicyCommand(), "eval", "--trace", dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "choose it with --instance-type")

	out, err := execute(newPolicyCommand(), "eval", "--trace", dir, "--instance-type", "p3.2xlarge", "--max-gpus", "2",
		"--iterations", "200", "--starts", "2", "--deadlines", "2x", "--policies", "skypilot-failover,all-on-demand")
	require.NoError(t, err, out)
	assert.Contains(t, out, "p3.2xlarge spot")
	assert.Regexp(t, `skypilot-failover\s+no run finished\s+-\s+-\s+0%`, out)
	assert.Contains(t, out, "median and p90 are over the runs that finished")
}
