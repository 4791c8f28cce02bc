package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	gi "github.com/schooner-ml/schooner/gpu/interference"
	"github.com/schooner-ml/schooner/gpu/interference/fake"
	"github.com/schooner-ml/schooner/gpu/nvml"
	"github.com/schooner-ml/schooner/interference"
	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/workers"
	"github.com/schooner-ml/schooner/workflows/interferencewf"
)

// TestInterferenceStudyEndToEnd runs the InterferenceStudy workflow on a real server with two
// node agents: one with a modelled GPU (its study comes back whole, marked simulated, and
// analyses) and one without an executor (it says so, the other node's study is unharmed).
func TestInterferenceStudyEndToEnd(t *testing.T) {
	e := startServer(t, "", false)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	control := workers.NewControlWorker(e.Client)
	require.NoError(t, control.Start())
	defer control.Stop()
	modelled := &workers.NodeAgent{ID: "model-node", Hostname: "h200-model", GPUs: nvml.FakeH200(1), Client: e.Client,
		Logger: e.log, Interference: fake.New()}
	bare := &workers.NodeAgent{ID: "bare-node", Hostname: "h200", GPUs: nvml.FakeH200(1), Client: e.Client, Logger: e.log}
	for _, n := range []*workers.NodeAgent{modelled, bare} {
		require.NoError(t, n.Start(ctx))
		defer n.Stop(false)
	}
	req := interference.StudyRequest{
		Pairs:      []interference.Pair{{LC: "decode-chain", BE: "gemm"}, {LC: "prefill-gemm", BE: "copy"}},
		Mechanisms: []interference.Mechanism{{Kind: interference.Streams}, {Kind: interference.MPS, Setting: 50}, {Kind: interference.MIG}},
		Requests:   50, Repeats: 2,
	}
	run, err := e.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "interference-e2e", TaskQueue: taskqueue.Control},
		interferencewf.InterferenceStudy, interference.StudyInput{Nodes: []string{"model-node", "bare-node"}, Request: req})
	require.NoError(t, err)
	var res interference.StudyResult
	require.NoError(t, run.Get(ctx, &res))
	require.Len(t, res.Nodes, 2)

	st := res.Nodes[0].Study
	require.NotNil(t, st, res.Nodes[0].Error)
	require.NoError(t, st.Validate())
	assert.Equal(t, "model-node", st.Node)
	assert.True(t, st.Simulated)
	assert.Len(t, st.Runs, 4+2+2*2, "four workloads alone, the two latency-critical ones also in a process of their own (MPS is probed), two pairs under two available mechanisms")
	require.Len(t, st.Unavailable, 1)
	assert.Equal(t, interference.MIG, st.Unavailable[0].Mechanism.Kind)
	rows, err := gi.Analyze(*st)
	require.NoError(t, err)
	assert.Len(t, rows, 4)

	assert.Nil(t, res.Nodes[1].Study)
	assert.Contains(t, res.Nodes[1].Error, "no interference executor")

	recordHistory(t, e.Client, "interference-e2e", "interference_study.json")
}
