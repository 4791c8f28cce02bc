package colocationwf

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/schooner-ml/schooner/colocation"
	"github.com/schooner-ml/schooner/interference"
	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/workflows/internal/wftest"
)

// standIns is the colocation activity's stand-in, which the tests mock.
var standIns = map[string]any{colocation.ActivityRunColocated: wftest.StandIn1[colocation.Pair, colocation.Result]()}

// study is an H200 study in which MPS at 50% kept decode-chain within 1.05× beside gemm.
func study(simulated bool) *interference.Study {
	pair := interference.Pair{LC: "decode-chain", BE: "gemm"}
	return &interference.Study{
		Version: interference.FormatVersion, GPU: interference.GPUInfo{Model: "NVIDIA H200"}, Simulated: simulated,
		Runs: []interference.Run{
			{Pair: interference.Pair{LC: "decode-chain"}, Mechanism: interference.Mechanism{Kind: interference.Dedicated},
				LC: &interference.Latency{Requests: 100, P50Ms: 0.7, P99Ms: 1, MeanMs: 0.8}, Repeats: 3},
			{Pair: interference.Pair{BE: "gemm"}, Mechanism: interference.Mechanism{Kind: interference.Dedicated},
				BE: &interference.Throughput{PerSecond: 600, Unit: "TFLOP/s"}, Repeats: 3},
			{Pair: pair, Mechanism: interference.Mechanism{Kind: interference.MPS, Setting: 50},
				LC: &interference.Latency{Requests: 100, P50Ms: 0.8, P99Ms: 1.05, MeanMs: 0.9},
				BE: &interference.Throughput{PerSecond: 360, Unit: "TFLOP/s"}, Repeats: 3},
		},
	}
}

func input() colocation.Input {
	return colocation.Input{
		Node:  "gpu-1",
		Pair:  colocation.Pair{HP: colocation.Program{Command: []string{"serve"}}, BE: colocation.Program{Command: []string{"train"}}},
		Study: study(false), Kinds: interference.Pair{LC: "decode-chain", BE: "gemm"},
	}
}

func status(t *testing.T, env *testsuite.TestWorkflowEnvironment) colocation.WorkflowStatus {
	t.Helper()
	return wftest.Query[colocation.WorkflowStatus](t, env, colocation.QueryStatus)
}

func TestAPlacedPairRunsOnItsNodeWithTheDefaults(t *testing.T) {
	env := wftest.NewEnv(standIns)
	var got colocation.Pair
	env.OnActivity(colocation.ActivityRunColocated, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, p colocation.Pair) (colocation.Result, error) {
			assert.Equal(t, taskqueue.Node("gpu-1"), activity.GetInfo(ctx).TaskQueue)
			got = p
			return colocation.Result{Status: colocation.Status{HPKernels: 10, MeanSlowdown: 1.04}}, nil
		})
	env.ExecuteWorkflow(Colocation, input())
	res := wftest.Result[colocation.Result](t, env)
	assert.Equal(t, int64(10), res.HPKernels)
	assert.Equal(t, colocation.DefaultParams(), got.Params, "the node gets the pair with its defaults")
	assert.Equal(t, colocation.MPSAuto, got.MPS)
	st := status(t, env)
	assert.Equal(t, colocation.Done, st.Phase)
	assert.Contains(t, st.Placement, "mps-50 kept decode-chain's p99 at 1.05×")
	assert.Equal(t, 1.04, st.Result.MeanSlowdown)
}

func TestPlacementRefusesWithoutEvidenceAndBadInputFailsAtOnce(t *testing.T) {
	for name, c := range map[string]struct {
		mutate func(*colocation.Input)
		want   string
	}{
		"target tighter than the study": {func(in *colocation.Input) {
			in.Pair.Params = colocation.DefaultParams()
			in.Pair.Params.TargetSlowdown = 1.02
		}, "placement refused: on NVIDIA H200 no measured mechanism"},
		"simulated study":      {func(in *colocation.Input) { in.Study = study(true) }, "simulated"},
		"no study, not forced": {func(in *colocation.Input) { in.Study = nil }, "study: no interference results"},
		"no node":              {func(in *colocation.Input) { in.Node = "" }, "node: empty"},
		"no HP command":        {func(in *colocation.Input) { in.Pair.HP.Command = nil }, "pair: hp.command"},
		"bad kinds":            {func(in *colocation.Input) { in.Kinds.BE = "" }, "kinds:"},
	} {
		t.Run(name, func(t *testing.T) {
			env := wftest.NewEnv(standIns)
			in := input()
			c.mutate(&in)
			env.ExecuteWorkflow(Colocation, in)
			app, err := wftest.Failure(t, env)
			require.ErrorContains(t, err, c.want)
			assert.True(t, app.NonRetryable())
		})
	}
}

func TestAForcedPairRunsAndAFailedOneSaysWhy(t *testing.T) {
	env := wftest.NewEnv(standIns)
	in := input()
	in.Study, in.Force = nil, true
	env.OnActivity(colocation.ActivityRunColocated, mock.Anything, mock.Anything).Return(colocation.Result{},
		temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil))
	env.ExecuteWorkflow(Colocation, in)
	require.ErrorContains(t, env.GetWorkflowError(), "stopped reporting")
	st := status(t, env)
	assert.Equal(t, colocation.Failed, st.Phase)
	assert.Contains(t, st.Placement, "forced")

	env = wftest.NewEnv(standIns)
	env.OnActivity(colocation.ActivityRunColocated, mock.Anything, mock.Anything).Return(colocation.Result{},
		temporal.NewNonRetryableApplicationError("this node agent has no NVIDIA GPU to colocate on", "NoGPU", nil))
	env.ExecuteWorkflow(Colocation, input())
	require.ErrorContains(t, env.GetWorkflowError(), "no NVIDIA GPU")
}
