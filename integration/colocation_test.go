package integration

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/colocation"
	"github.com/schooner-ml/schooner/gpu/colocate"
	"github.com/schooner-ml/schooner/gpu/colocate/fakegpu"
	"github.com/schooner-ml/schooner/gpu/nvml"
	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/workers"
	"github.com/schooner-ml/schooner/workflows/colocationwf"
)

// TestColocationEndToEnd runs the Colocation workflow on a real server: a node agent runs the
// pair with the real runtime (launch shim, board, supervisor) over a fake CUDA (no GPU here),
// the workflow's status follows it, and a simulated node refuses a pair for want of a GPU.
func TestColocationEndToEnd(t *testing.T) {
	e := startServer(t, "", false)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	fake, err := fakegpu.Build(ctx, t.TempDir())
	require.NoError(t, err)
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer devnull.Close()

	control := workers.NewControlWorker(e.Client)
	require.NoError(t, control.Start())
	defer control.Stop()
	gpuNode := &workers.NodeAgent{ID: "gpu-node", Hostname: "h200", GPUs: nvml.FakeH200(1), Client: e.Client, Logger: e.log,
		Colocation: &colocate.Runner{WorkDir: t.TempDir(), Stdout: devnull}}
	bare := &workers.NodeAgent{ID: "bare-node", Hostname: "cpu", GPUs: nvml.FakeH200(0), Client: e.Client, Logger: e.log}
	for _, n := range []*workers.NodeAgent{gpuNode, bare} {
		require.NoError(t, n.Start(ctx))
		defer n.Stop(false)
	}

	pair := colocation.Pair{
		HP:  colocation.Program{Command: fake.Command(fakegpu.Runtime, "hp_gemm_kernel", 20, 10, 132), Env: fake.Env()},
		BE:  colocation.Program{Command: fake.Command(fakegpu.Dlsym, "be_gemm_kernel", 5, 2, 132), Env: fake.Env()},
		MPS: colocation.MPSOff,
	}
	run, err := e.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "colocation-e2e", TaskQueue: taskqueue.Control},
		colocationwf.Colocation, colocation.Input{Node: "gpu-node", Pair: pair, Force: true})
	require.NoError(t, err)
	var res colocation.Result
	require.NoError(t, run.Get(ctx, &res))
	assert.Zero(t, res.HPExit)
	assert.Equal(t, int64(20), res.HPKernels)
	assert.Equal(t, 132, res.SMs)
	assert.Equal(t, 20.0, res.HPShim["launches"].(map[string]any)["runtime"])
	v, err := e.Client.QueryWorkflow(ctx, "colocation-e2e", "", colocation.QueryStatus)
	require.NoError(t, err)
	var st colocation.WorkflowStatus
	require.NoError(t, v.Get(&st))
	assert.Equal(t, colocation.Done, st.Phase)
	assert.Equal(t, int64(20), st.Result.HPKernels)
	recordHistory(t, e.Client, "colocation-e2e", "colocation.json")

	run, err = e.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "colocation-bare", TaskQueue: taskqueue.Control},
		colocationwf.Colocation, colocation.Input{Node: "bare-node", Pair: pair, Force: true})
	require.NoError(t, err)
	require.ErrorContains(t, run.Get(ctx, nil), "no NVIDIA GPU")
}
