package nodeswf

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/nodes"
	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/workflows/internal/wftest"
)

// standIns are the node activities' stand-ins, which the inventory tests mock.
var standIns = map[string]any{nodes.ActivityListNodes: wftest.StandIn[[]string](), nodes.ActivityInventory: wftest.StandIn[gpu.Inventory]()}

func TestNodeInventoryAsksEveryNodeAndReportsUnreachable(t *testing.T) {
	env := wftest.NewEnv(standIns)
	env.OnActivity(nodes.ActivityListNodes, mock.Anything).Return([]string{"a", "b"}, nil).Once()
	env.OnActivity(nodes.ActivityInventory, mock.Anything).Return(func(ctx context.Context) (gpu.Inventory, error) {
		info := activity.GetInfo(ctx)
		if info.TaskQueue == taskqueue.Node("b") {
			return gpu.Inventory{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
		}
		return gpu.Inventory{NodeID: "a", GPUs: []gpu.Device{{Name: "NVIDIA H200"}}}, nil
	})
	env.ExecuteWorkflow(NodeInventory, nodes.InventoryRequest{})
	res := wftest.Result[nodes.InventoryResult](t, env)
	require.Len(t, res.Nodes, 2)
	assert.Equal(t, "a", res.Nodes[0].NodeID)
	assert.Len(t, res.Nodes[0].Inventory.GPUs, 1)
	assert.Empty(t, res.Nodes[0].Error)
	assert.Equal(t, "b", res.Nodes[1].NodeID)
	assert.Contains(t, res.Nodes[1].Error, "unreachable")
	env.AssertExpectations(t)
}

func TestNodeInventoryExplicitNodesSkipsRegistry(t *testing.T) {
	env := wftest.NewEnv(standIns)
	env.OnActivity(nodes.ActivityInventory, mock.Anything).Return(gpu.Inventory{NodeID: "x"}, nil).Once()
	env.ExecuteWorkflow(NodeInventory, nodes.InventoryRequest{Nodes: []string{"x"}})
	res := wftest.Result[nodes.InventoryResult](t, env)
	require.Len(t, res.Nodes, 1)
	env.AssertNotCalled(t, nodes.ActivityListNodes, mock.Anything)
}

func TestNodeInventoryFailsWhenRegistryUnreadable(t *testing.T) {
	env := wftest.NewEnv(standIns)
	env.OnActivity(nodes.ActivityListNodes, mock.Anything).Return(nil, temporal.NewNonRetryableApplicationError("boom", "test", nil))
	env.ExecuteWorkflow(NodeInventory, nodes.InventoryRequest{})
	require.Error(t, env.GetWorkflowError())
}

func queryNodes(t *testing.T, env *testsuite.TestWorkflowEnvironment) []nodes.Record {
	t.Helper()
	return wftest.Query[[]nodes.Record](t, env, nodes.QueryNodes)
}

func TestNodeRegistryRegisterDeregisterAndQuery(t *testing.T) {
	env := wftest.NewEnv(nil)
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(nodes.SignalRegister, nodes.Record{ID: "zeta", Hostname: "z"})
		env.SignalWorkflow(nodes.SignalRegister, nodes.Record{ID: "alpha", Hostname: "a", StartedAt: started})
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		got := queryNodes(t, env)
		require.Len(t, got, 2)
		assert.Equal(t, "alpha", got[0].ID, "query answers in id order")
		assert.Equal(t, started, got[0].StartedAt)
		assert.False(t, got[1].StartedAt.IsZero(), "a missing start time is filled in")
		// A restarted agent re-registers: one entry, fresh LastRegistered.
		env.SignalWorkflow(nodes.SignalRegister, nodes.Record{ID: "alpha", Hostname: "a2"})
		env.SignalWorkflow(nodes.SignalDeregister, "zeta")
	}, 2*time.Second)
	env.RegisterDelayedCallback(func() {
		got := queryNodes(t, env)
		require.Len(t, got, 1)
		assert.Equal(t, "a2", got[0].Hostname)
		assert.Equal(t, started, got[0].StartedAt, "re-registration keeps the first start time")
		env.CancelWorkflow()
	}, 3*time.Second)
	env.ExecuteWorkflow(NodeRegistry, nodes.RegistryState{})
	require.True(t, env.IsWorkflowCompleted())
}

func TestNodeRegistryContinuesAsNewWithState(t *testing.T) {
	env := wftest.NewEnv(nil)
	env.RegisterDelayedCallback(func() {
		for i := 0; i < maxRegistrySignals; i++ {
			env.SignalWorkflow(nodes.SignalRegister, nodes.Record{ID: "n"})
		}
	}, time.Second)
	env.ExecuteWorkflow(NodeRegistry, nodes.RegistryState{Nodes: []nodes.Record{{ID: "old"}}})
	err := env.GetWorkflowError()
	require.Error(t, err)
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, err, &can)
	var next nodes.RegistryState
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Len(t, next.Nodes, 2)
	assert.Equal(t, "n", next.Nodes[0].ID)
	assert.Equal(t, "old", next.Nodes[1].ID)
}
