package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/activities/fleetact"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/planner/serve"
	"github.com/schooner-ml/schooner/serving"
)

// runPlanServeSplit runs `plan serve` with stdout and stderr apart: the JSON result and a
// spec written to "-" must come out clean.
func runPlanServeSplit(args ...string) (stdout, stderr string, err error) {
	cmd := newPlanServeCommand(testGlobals())
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// planAndWrite plans with args on the fixture offerings, writes plan pick's spec, and returns
// the plans (from --json), the spec as `serve deploy` reads it, and what went to stderr.
func planAndWrite(t *testing.T, pick int, args ...string) (*serve.Result, serving.Spec, string) {
	t.Helper()
	offers := servingOfferings(t)
	path := filepath.Join(t.TempDir(), "plan.yaml")
	args = append(args, "--offerings", offers, "--json", "--write-spec", path, "--pick", strconv.Itoa(pick))
	out, errOut, err := runPlanServeSplit(args...)
	require.NoError(t, err, errOut)
	var res serve.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.GreaterOrEqual(t, len(res.Plans), pick)

	var problems bytes.Buffer
	spec, err := loadServingSpec(path, &problems) // what `serve deploy` does: parse, defaults, Validate
	require.NoError(t, err, problems.String())
	deployOut, err := executeFresh(newServeDeployCommand, "--dry-run", path)
	require.NoError(t, err, deployOut)
	assert.Contains(t, deployOut, "is valid")
	assert.Contains(t, errOut, "deploy it with: schooner serve deploy "+path)
	return &res, spec, errOut
}

// assertDeployable checks the spec's resources select exactly the plan's offerings through
// the workflow's own filter (fleetact.Offerings), and that the workflow's placement puts
// every stage of both pools on them.
func assertDeployable(t *testing.T, p serve.Plan, spec serving.Spec) {
	t.Helper()
	var all []cloud.Offering
	data, err := os.ReadFile(servingOfferings(t))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &all))
	offers, err := fleetact.Offerings(context.Background(), cloud.NewFake("fixture", all...), spec.Resources, "serving")
	require.NoError(t, err)
	type where struct{ zone, typ string }
	var planned, allowed []where
	for _, pool := range p.Pools {
		for _, pl := range pool.Placements {
			planned = append(planned, where{pl.Zone, pl.InstanceType})
		}
	}
	for _, o := range offers {
		assert.Equal(t, p.GPU, o.GPUType)
		allowed = append(allowed, where{o.Zone, o.InstanceType})
	}
	for _, w := range planned {
		assert.Contains(t, allowed, w, "the plan's offering is allowed")
	}
	for _, w := range allowed {
		assert.Contains(t, planned, w, "only the plan's offerings are allowed")
	}

	req := serving.PlacementRequest{Offers: offers, Spot: spec.Spot, GPUTypes: spec.Resources.GPUTypes, Now: time.Unix(0, 0)}
	for r := range spec.Replicas {
		for s := range spec.Stages {
			req.Need = append(req.Need, serving.Slot{Replica: r, Stage: s})
		}
	}
	for r := range spec.PrefillReplicas {
		for s := range spec.Stages {
			req.Need = append(req.Need, serving.Slot{Pool: serving.PoolPrefill, Replica: r, Stage: s})
		}
	}
	placed := serving.Place(req)
	assert.Empty(t, placed.Unplaced)
	assert.Len(t, placed.Stages, p.Instances, "one machine per stage, as the plan buys")
}

func TestPlanServeWriteSpecColocated(t *testing.T) {
	t.Parallel()
	res, spec, errOut := planAndWrite(t, 1, "--model", "llama-3-8b", "--rate", "3", "--prompt", "1024", "--output", "128")
	p := res.Plans[0]
	require.Equal(t, serve.Colocated, p.Mode)
	pool := p.Pools[0]
	assert.Equal(t, serving.Model{Name: "llama-8b"}, spec.Model, "Llama 3 8B is the worker's llama-8b")
	assert.Equal(t, "llama-8b", spec.Name)
	assert.Equal(t, pool.Stages, spec.Stages)
	assert.Equal(t, pool.Replicas, spec.Replicas)
	assert.Zero(t, spec.PrefillReplicas)
	assert.Equal(t, pool.MaxBatch, spec.MaxBatch)
	assert.Equal(t, 1024+128, spec.MaxContext)
	assert.Equal(t, fleet.OnDemandOnly, spec.Spot, "no --spot")
	assert.Equal(t, serving.ReplicationOn, spec.KVReplication)
	assert.Equal(t, serving.Latency{TTFTMillis: 2000, TPOTMillis: 100}, spec.Latency)
	assert.Equal(t, []string{string(p.GPU)}, spec.Resources.GPUTypes)
	assert.Equal(t, []string{"gcp"}, spec.Resources.Clouds)
	assert.NotContains(t, errOut, "differs from the plan", "a colocated plan in one zone is said exactly")
	assertDeployable(t, p, spec)
}

func TestPlanServeWriteSpecDisaggregated(t *testing.T) {
	t.Parallel()
	res, spec, errOut := planAndWrite(t, 1, "--model", "LLAMA-3-8", "--rate", "2", "--prompt", "8192", "--output", "32",
		"--tpot", "40ms", "--gpu", "A100-80", "--spot")
	p := res.Plans[0]
	require.Equal(t, serve.Disaggregated, p.Mode, "long prompts, short outputs")
	prompt, token := p.Pools[0], p.Pools[1]
	assert.Equal(t, token.Stages, spec.Stages)
	assert.Equal(t, token.Replicas, spec.Replicas, "replicas is the token pool")
	assert.Equal(t, prompt.Replicas, spec.PrefillReplicas, "prefill_replicas is the prompt pool")
	assert.True(t, spec.Disaggregated())
	assert.Equal(t, token.MaxBatch, spec.MaxBatch)
	assert.Equal(t, 8192+32, spec.MaxContext)
	assert.Equal(t, serving.ReplicationOn, spec.KVReplication, "required by a prefill pool")
	assert.Equal(t, fleet.SpotWithFallback, spec.Spot, "a spot plan buys spot first, on-demand where it runs short")
	assert.Equal(t, serving.Latency{TTFTMillis: 2000, TPOTMillis: 40}, spec.Latency)
	assertDeployable(t, p, spec)

	// the pools' zones: whatever the spec cannot keep apart is said
	var zones []string
	for _, pool := range p.Pools {
		for _, pl := range pool.Placements {
			zones = append(zones, pl.Zone)
		}
	}
	if len(sortedSet(zones)) > 1 {
		assert.Contains(t, errOut, "differs from the plan: the plan places the prompt pool in")
	}
}

func TestPlanServeWriteSpecToStdout(t *testing.T) {
	t.Parallel()
	out, errOut, err := runPlanServeSplit("--model", "llama-3-8b", "--rate", "3", "--prompt", "1024", "--output", "128",
		"--offerings", servingOfferings(t), "--write-spec", "-")
	require.NoError(t, err, errOut)
	spec, err := serving.ParseSpec([]byte(out), "yaml")
	require.NoError(t, err, "stdout is the spec alone:\n%s", out)
	require.NoError(t, spec.WithDefaults().Validate())
	assert.Contains(t, out, "# Written by `schooner plan serve`: plan 1 of")
	assert.Contains(t, errOut, "RANK", "the table goes to stderr")
	assert.Contains(t, errOut, "as a ServingDeployment spec to stdout")
}

func TestPlanServeWriteSpecRefuses(t *testing.T) {
	t.Parallel()
	offers := servingOfferings(t)
	disagg := []string{"--model", "LLAMA-3-8", "--rate", "2", "--prompt", "8192", "--output", "32", "--tpot", "40ms",
		"--gpu", "A100-80", "--spot", "--offerings", offers}

	// the premise: plan 2 is a prompt pool of one depth and a token pool of another
	out, _, err := runPlanServeSplit(append(disagg, "--json")...)
	require.NoError(t, err)
	var res serve.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Plans, 3)
	require.Equal(t, serve.Disaggregated, res.Plans[1].Mode)
	require.NotEqual(t, res.Plans[1].Pools[0].Stages, res.Plans[1].Pools[1].Stages)

	path := filepath.Join(t.TempDir(), "plan.yaml")
	out, _, err = runPlanServeSplit(append(disagg, "--write-spec", path, "--pick", "2")...)
	require.Error(t, err)
	assert.ErrorContains(t, err, "--write-spec: plan 2 cannot be written as a ServingDeployment spec: its prompt pool has")
	assert.ErrorContains(t, err, "a spec's pools share one `stages` (plan 1 of those shown can: --pick 1)")
	assert.Contains(t, out, "RANK", "the plans are shown, to pick another")
	assert.NoFileExists(t, path)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "OPT-350", "--rate", "1", "--write-spec", path},
			"--write-spec: --model OPT-350 is not a Llama-style decoder (SwiGLU MLP, rotary positions)"},
		{[]string{"--model", "llama-1b", "--rate", "1", "--pick", "2"}, "--pick chooses the plan --write-spec writes"},
		{[]string{"--model", "llama-1b", "--rate", "1", "--write-spec", path, "--pick", "4"}, "--pick must be between 1 and --top (3), got 4"},
		{[]string{"--model", "llama-1b", "--rate", "1", "--write-spec", "-", "--json"}, "--json and --write-spec - would both write to stdout"},
	} {
		_, _, err := runPlanServeSplit(append(tc.args, "--offerings", offers)...)
		assert.ErrorContains(t, err, tc.want, "%v", tc.args)
		assert.NoFileExists(t, path)
	}
}

// TestPlanServeWriteSpecOneGPUMachines: with --write-spec the search keeps to one-GPU
// machines, even where a larger machine is cheaper, and says so.
func TestPlanServeWriteSpecOneGPUMachines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	offers := filepath.Join(dir, "offerings.json")
	require.NoError(t, os.WriteFile(offers, []byte(`[
		{"provider":"aws","region":"us-east-1","zone":"us-east-1a","instance_type":"g6.12xlarge","gpu_type":"L4-24",
		 "gpus_per_instance":4,"on_demand_price":0.7},
		{"provider":"aws","region":"us-east-1","zone":"us-east-1b","instance_type":"g6.xlarge","gpu_type":"L4-24",
		 "gpus_per_instance":1,"on_demand_price":0.8}
	]`), 0o600))
	args := []string{"--model", "llama-1b", "--rate", "1", "--offerings", offers}
	out, _, err := runPlanServeSplit(append(args, "--json")...)
	require.NoError(t, err)
	var res serve.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, 4, res.Plans[0].GPUsPerInstance, "the premise: unwritten, the packed machine is cheapest")

	path := filepath.Join(dir, "plan.yaml")
	_, errOut, err := runPlanServeSplit(append(args, "--write-spec", path)...)
	require.NoError(t, err, errOut)
	assert.Contains(t, errOut, "planning on one-GPU machines only")
	assert.Contains(t, errOut, "1 offerings of larger machines left out")
	spec, err := loadServingSpec(path, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, []string{"g6.xlarge"}, spec.Resources.InstanceTypes)

	bigOnly := filepath.Join(dir, "big.json")
	require.NoError(t, os.WriteFile(bigOnly, []byte(`[{"provider":"aws","region":"us-east-1","zone":"us-east-1a",
		"instance_type":"g6.12xlarge","gpu_type":"L4-24","gpus_per_instance":4,"on_demand_price":2.0}]`), 0o600))
	_, _, err = runPlanServeSplit("--model", "llama-1b", "--rate", "1", "--offerings", bigOnly, "--write-spec", path+"2")
	assert.ErrorContains(t, err, "--write-spec: none of the 1 offerings is a one-GPU machine")
}

// TestSpecFromPlanSaysWhatItCannot covers plans the search does not give with --write-spec
// (it keeps to one-GPU machines) but a plan can hold, and the differences it writes anyway.
func TestSpecFromPlanSaysWhatItCannot(t *testing.T) {
	t.Parallel()
	arch, ok := serveArchitecture("llama-1b")
	require.True(t, ok)
	in := specInputs{arch: arch, prompt: 512, output: 256, targets: serve.Targets{TTFT: time.Second, TPOT: 1500 * time.Microsecond}}
	place := func(zone string, capacity cloud.CapacityType, n int) serve.Placement {
		return serve.Placement{Provider: "aws", Region: "us-east-1", Zone: zone, InstanceType: "g6.xlarge", Capacity: capacity,
			Instances: n, Replicas: n}
	}

	packed := serve.Plan{Mode: serve.Colocated, GPU: "L4-24", GPUsPerInstance: 4, Pools: []serve.Pool{
		{Role: serve.RoleBoth, Stages: 1, TP: 2, Replicas: 2, MaxBatch: 64, Capacity: "on-demand"}}}
	_, _, err := specFromPlan(packed, 3, in)
	var ue *unexpressibleError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, 3, ue.Rank)
	ue.Shown = 3
	assert.ErrorContains(t, err, "(none of those shown can: raise --top to see more)")
	assert.Len(t, ue.Reasons, 2)
	assert.ErrorContains(t, err, "it packs stages onto L4-24 machines of 4 GPUs, and a spec runs one stage per machine, on one GPU")
	assert.ErrorContains(t, err, "the colocated pool splits each stage over 2 GPUs (TP2), and a spec's inference worker has no tensor parallelism")

	// pipelines of two stages, a pool partly on demand, a batch over the spec's bound
	mixed := serve.Plan{Mode: serve.Disaggregated, GPU: "L4-24", GPUsPerInstance: 1, Spot: true, Pools: []serve.Pool{
		{Role: serve.RolePrompt, Stages: 2, TP: 1, Replicas: 3, Capacity: "spot",
			Placements: []serve.Placement{place("us-east-1a", cloud.Spot, 6)}},
		{Role: serve.RoleToken, Stages: 2, TP: 1, Replicas: 2, MaxBatch: 2000, Capacity: "mixed",
			Placements: []serve.Placement{place("us-east-1a", cloud.Spot, 2), place("us-east-1b", cloud.OnDemand, 2)}}}}
	spec, notes, err := specFromPlan(mixed, 1, in)
	require.NoError(t, err)
	require.NoError(t, spec.WithDefaults().Validate())
	assert.Equal(t, 2, spec.Stages)
	assert.Equal(t, 2, spec.Replicas)
	assert.Equal(t, 3, spec.PrefillReplicas)
	assert.Equal(t, serving.MaxBatchLimit, spec.MaxBatch)
	assert.Equal(t, fleet.SpotWithFallback, spec.Spot)
	assert.Equal(t, serving.Latency{TTFTMillis: 1000, TPOTMillis: 1.5}, spec.Latency, "a target is never rounded looser")
	assert.Equal(t, []string{"us-east-1a", "us-east-1b"}, spec.Resources.Zones)
	require.Len(t, notes, 4)
	assert.Contains(t, notes[0], "max_batch is 1024, the most a spec allows; the plan let a replica hold 2000 sequences")
	assert.Contains(t, notes[1], "the plan places the prompt pool in us-east-1a and the token pool in us-east-1a, us-east-1b")
	assert.Contains(t, notes[2], "the plan buys the token pool mixed where the offerings' spot capacity ran short")
	assert.Contains(t, notes[3], "the plan keeps a replica's stages in one zone; the deployment spreads them")

	// a Llama-style model that is no built-in is written by its dimensions, under a valid name
	custom := arch
	custom.Name, custom.Layers = "My Llama_12L", 12
	in.arch = custom
	one := serve.Plan{Mode: serve.Colocated, GPU: "L4-24", GPUsPerInstance: 1, Pools: []serve.Pool{
		{Role: serve.RoleBoth, Stages: 1, TP: 1, Replicas: 1, MaxBatch: 8, Capacity: "on-demand",
			Placements: []serve.Placement{place("us-east-1b", cloud.OnDemand, 1)}}}}
	spec, notes, err = specFromPlan(one, 1, in)
	require.NoError(t, err)
	assert.Empty(t, notes)
	assert.Equal(t, "my-llama-12l", spec.Name)
	assert.Equal(t, 12, spec.Model.Layers)
	assert.Empty(t, spec.Model.Name)
	assert.Equal(t, fleet.OnDemandOnly, spec.Spot)
	require.NoError(t, spec.WithDefaults().Validate())
	assert.True(t, slices.Equal([]string{"aws"}, spec.Resources.Clouds))
}
