package planner

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
)

func TestInvalidPlansAreErrorsNamingTheProblem(t *testing.T) {
	t.Parallel()
	m := toyModel(4, 1e6, 1e6, 1e6)
	withCompute(m, gpu.A100_40, 1, 1, a100Time)
	withCompute(m, gpu.A100_40, 4, 1, a100Time) // compute for TP 4 but no memory profile
	withCompute(m, gpu.V100, 2, 1, v100Time)
	n := flatNet(flatLink(1, 0))
	a := replica(gpu.A100_40, 1, "us-central1-a", 4)
	v := replica(gpu.V100, 2, "us-central1-b", 2.5)
	valid := func() *Plan { return plan(8, 1, stage(0, 1, a, a), stage(2, 3, v, v)) }

	cases := []struct {
		name           string
		edit           func(p *Plan)
		stage, replica int
		want           string
	}{
		{"no stages", func(p *Plan) { p.Stages = nil }, -1, -1, "no stages"},
		{"zero micro-batch", func(p *Plan) { p.MicroBatch = 0 }, -1, -1, "micro_batch is 0"},
		{"first stage not at 0", func(p *Plan) { p.Stages[0].FirstLayer = 1 }, 0, -1, "must start at layer 0"},
		{"gap", func(p *Plan) { p.Stages[0].LastLayer = 0 }, 1, -1, "leaves layers 1..1 unassigned (stage 0 ends at layer 0)"},
		{"overlap", func(p *Plan) { p.Stages[1].FirstLayer = 1 }, 1, -1, "first_layer 1 overlaps stage 0, which ends at layer 1"},
		{"reversed range", func(p *Plan) { p.Stages[1].LastLayer = 1 }, 1, -1, "last_layer 1 is before first_layer 2"},
		{"short of the last layer", func(p *Plan) { p.Stages[1].LastLayer = 2 }, 1, -1, "leaves layers 3..3 unassigned (toy has 4 layers"},
		{"past the last layer", func(p *Plan) { p.Stages[1].LastLayer = 4 }, 1, -1, "past the model's last layer 3"},
		{"unequal replica counts", func(p *Plan) { p.Stages[1].Replicas = p.Stages[1].Replicas[:1] }, 1, -1, "1 replicas, but stage 0 has 2"},
		{"empty stage", func(p *Plan) { p.Stages[1].Replicas = nil }, 1, -1, "no replicas"},
		{"batch too small", func(p *Plan) { p.GlobalBatch = 1 }, -1, -1, "global_batch 1 is less than micro_batch 1 × 2 replicas"},
		{"tp beyond the machine", func(p *Plan) { p.Stages[1].Replicas[1].GPUsPerNode = 1 }, 1, 1, "tp 2 exceeds gpus_per_node 1"},
		{"no machine size", func(p *Plan) { p.Stages[0].Replicas[1].GPUsPerNode = 0 }, 0, 1, "gpus_per_node is 0"},
		{"zero tp", func(p *Plan) { p.Stages[0].Replicas[0].TP = 0 }, 0, 0, "tp is 0"},
		{"no zone", func(p *Plan) { p.Stages[0].Replicas[0].Zone = "" }, 0, 0, "zone is empty"},
		{"negative price", func(p *Plan) { p.Stages[0].Replicas[0].USDPerGPUHour = -1 }, 0, 0, "usd_per_gpu_hour is negative"},
		{"unknown GPU", func(p *Plan) { p.Stages[1].Replicas[0].GPU = "TPU-v5" }, 1, 0, `unknown GPU "TPU-v5"`},
		{"GPU not profiled", func(p *Plan) { p.Stages[1].Replicas[0].GPU = gpu.H100 }, 1, 0, "toy has no compute profile for H100-80 (profiled: A100-40, V100-16)"},
		{"tp not profiled", func(p *Plan) { p.Stages[1].Replicas[1].TP = 1 }, 1, 1, "tp 1 is not profiled for V100-16 in toy (profiled: 2)"},
		{"micro-batch not profiled", func(p *Plan) { p.MicroBatch = 2 }, 0, 0, "micro_batch 2 is not profiled for A100-40 at tp 1 in toy (profiled: 1)"},
		{"no memory profile", func(p *Plan) { p.Stages[0].Replicas[0].TP = 4 }, 0, 0, "toy has no memory profile for tp 4 (profiled: 1, 2)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := valid()
			c.edit(p)
			for _, err := range []error{simulateErr(p, m, n), p.Validate(m)} {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrInvalidPlan)
				assert.ErrorContains(t, err, c.want)
				var pe *PlanError
				require.True(t, errors.As(err, &pe))
				assert.Equal(t, c.stage, pe.Stage, "stage of %v", err)
				assert.Equal(t, c.replica, pe.Replica, "replica of %v", err)
			}
		})
	}

	require.NoError(t, valid().Validate(m))
	_, err := Simulate(valid(), m, n)
	require.NoError(t, err)
}

func simulateErr(p *Plan, m *ModelProfile, n *Network) error {
	_, err := Simulate(p, m, n)
	return err
}

func TestPlanErrorMessages(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "invalid plan: stage 1 replica 2: x", (&PlanError{Stage: 1, Replica: 2, Problem: "x"}).Error())
	assert.Equal(t, "invalid plan: stage 1: x", (&PlanError{Stage: 1, Replica: -1, Problem: "x"}).Error())
	assert.Equal(t, "invalid plan: x", (&PlanError{Stage: -1, Replica: -1, Problem: "x"}).Error())
}

const validPlanJSON = `{
  "model": "toy",
  "global_batch": 8,
  "micro_batch": 1,
  "stages": [
    {"first_layer": 0, "last_layer": 1, "replicas": [
      {"gpu": "A100-40", "tp": 1, "zone": "us-central1-a", "region": "us-central1", "gpus_per_node": 1, "usd_per_gpu_hour": 3.67}
    ]},
    {"first_layer": 2, "last_layer": 3, "replicas": [
      {"gpu": "V100-16", "tp": 2, "zone": "us-central1-b", "region": "us-central1", "gpus_per_node": 2,
       "instance_type": "n1-standard-16+2xV100", "usd_per_gpu_hour": 2.55}
    ]}
  ]
}`

func TestParsePlan(t *testing.T) {
	t.Parallel()
	p, err := ParsePlan([]byte(validPlanJSON))
	require.NoError(t, err)
	assert.Equal(t, "toy", p.Model)
	require.Len(t, p.Stages, 2)
	assert.Equal(t, Replica{GPU: gpu.V100, TP: 2, Zone: "us-central1-b", Region: "us-central1", GPUsPerNode: 2,
		InstanceType: "n1-standard-16+2xV100", USDPerGPUHour: 2.55}, p.Stages[1].Replicas[0])

	// What json.Marshal writes, ParsePlan reads back.
	out, err := json.Marshal(p)
	require.NoError(t, err)
	again, err := ParsePlan(out)
	require.NoError(t, err)
	assert.Equal(t, p, again)
}

func TestParsePlanRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		want     []string
	}{
		{"empty", "", []string{"the file is empty"}},
		{"truncated", `{"model": "toy", "stages": [`, []string{"ends in the middle"}},
		{"syntax", "{\n  \"model\": \"toy\",\n  \"global_batch\" 8\n}", []string{"line 3, column", "invalid character"}},
		{"unknown field", "{\n  \"model\": \"toy\",\n  \"microbatch\": 1\n}", []string{`unknown field "microbatch"`}},
		{"unknown replica field", `{"model":"toy","stages":[{"replicas":[{"gpu":"A100-40","zones":"a"}]}]}`, []string{`unknown field "zones"`}},
		{"wrong type", `{"model": "toy", "global_batch": "eight"}`, []string{`field "global_batch" wants int, got JSON string`, "line 1"}},
		{"trailing data", validPlanJSON + ` {}`, []string{"unexpected data after the plan object"}},
		{"no model", `{"global_batch": 8, "micro_batch": 1, "stages": []}`, []string{"model is empty"}},
		{"shape", `{"model": "toy", "global_batch": 8, "micro_batch": 1, "stages": []}`, []string{"invalid plan: no stages"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParsePlan([]byte(c.in))
			require.Error(t, err)
			for _, w := range c.want {
				assert.ErrorContains(t, err, w)
			}
		})
	}
}

// The example in docs/plan-format.md must stay a valid plan.
func TestPlanFormatDocExampleParses(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/plan-format.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllSubmatch(doc, -1)
	require.NotEmpty(t, blocks, "docs/plan-format.md has no json example")
	p, err := ParsePlan(blocks[0][1])
	require.NoError(t, err)
	assert.Len(t, p.Stages, 2)
	assert.NotEqual(t, p.Stages[0].Replicas[0].GPU, p.Stages[1].Replicas[0].GPU, "the example is heterogeneous")
}
