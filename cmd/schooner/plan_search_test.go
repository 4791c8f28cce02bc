package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

func TestDecodeOfferingsTellsPoolsFromOfferings(t *testing.T) {
	t.Parallel()
	pools, offers, err := decodeOfferings([]byte(`[
		{"region":"us-central1","zone":"us-central1-a","gpu":"A100-40","gpus_per_node":4,"gpus":32,"usd_per_gpu_hour":3.67},
		{"provider":"gcp","region":"us-central1","zone":"us-central1-b","instance_type":"n1-v100x4","gpu_type":"V100-16",
		 "gpus_per_instance":4,"spot_price":4.0,"on_demand_price":10.2,"spot_capacity":3}
	]`))
	require.NoError(t, err)
	require.Len(t, pools, 1)
	require.Len(t, offers, 1)
	assert.Equal(t, gpu.A100_40, pools[0].GPU)
	assert.Equal(t, gpu.V100, offers[0].GPUType)

	_, _, err = decodeOfferings([]byte(`[{"zone":"x"}]`))
	assert.ErrorContains(t, err, "neither a pool")
	_, _, err = decodeOfferings([]byte(`[{"gpu":"A100-40","gpus":"many"}]`))
	assert.ErrorContains(t, err, "item 0 (a pool)")
	_, _, err = decodeOfferings([]byte(`{}`))
	assert.ErrorContains(t, err, "JSON list")
}

func TestPlanSearchCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "pools.json")
	require.NoError(t, os.WriteFile(path, []byte(`[
		{"region":"us-central1","zone":"us-central1-a","gpu":"A100-40","gpus_per_node":4,"gpus":8,"usd_per_gpu_hour":3.67},
		{"region":"us-central1","zone":"us-central1-a","gpu":"V100-16","gpus_per_node":4,"gpus":16,"usd_per_gpu_hour":2.55}
	]`), 0o600))

	run := func(args ...string) (string, error) { return execute(newPlanSearchCommand(&globals{}), args...) }

	out, err := run("--model", "OPT-350M", "--global-batch", "256", "--offerings", path, "--top", "3")
	require.NoError(t, err, out)
	assert.Contains(t, out, "RANK")
	assert.Contains(t, out, "L0-")
	assert.Contains(t, out, "A100-40 TP")

	out, err = run("--model", "OPT-350M", "--global-batch", "256", "--offerings", path, "--json", "--objective", "cost")
	require.NoError(t, err, out)
	var res planner.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.True(t, res.Best.Estimate.Fits)
	assert.NotEmpty(t, res.Best.Plan.Stages)

	_, err = run("--model", "OPT-350M", "--offerings", path, "--max-usd-per-iter", "1e-9")
	assert.ErrorContains(t, err, "the cheapest feasible plan costs")
	_, err = run("--offerings", path)
	assert.ErrorContains(t, err, "--model is required")
	_, err = run("--model", "OPT-350M", "--offerings", path, "--objective", "speed")
	assert.ErrorContains(t, err, "invalid --objective")
}
