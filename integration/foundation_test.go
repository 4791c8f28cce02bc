package integration

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/schooner-ml/schooner/devserver"
	"github.com/schooner-ml/schooner/gpu/nvml"
	"github.com/schooner-ml/schooner/nodes"
	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/workers"
	"github.com/schooner-ml/schooner/workflows/nodeswf"
)

// TestNodeInventoryEndToEnd is the first workflow end to end: a real server, the control
// worker, two node agents (one with fake H200s, one without a driver) and one registered
// node whose agent is gone.
func TestNodeInventoryEndToEnd(t *testing.T) {
	e := startServer(t, "", true)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	require.NoError(t, workers.EnsureSearchAttributes(ctx, e.Client, "default"))
	require.NoError(t, workers.EnsureSearchAttributes(ctx, e.Client, "default"), "a second registration is a no-op")
	sa, err := e.Client.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	require.NoError(t, err)
	for name, typ := range workers.SearchAttributes {
		assert.Equal(t, typ, sa.GetCustomAttributes()[name], "search attribute %s", name)
	}
	assert.Equal(t, enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST, sa.GetCustomAttributes()["SchoonerZones"])

	resp, err := http.Get("http://" + e.Server.UIAddress() + "/")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the Temporal UI answers on /")

	control := workers.NewControlWorker(e.Client)
	require.NoError(t, control.Start())
	defer control.Stop()
	gpuNode := &workers.NodeAgent{ID: "gpu-node", Hostname: "h200-box", GPUs: nvml.FakeH200(2), Client: e.Client, Logger: e.log}
	cpuNode := &workers.NodeAgent{ID: "cpu-node", Hostname: "laptop", GPUs: &nvml.Fake{InitErr: nvml.ErrLibraryNotFound}, Client: e.Client, Logger: e.log}
	require.NoError(t, gpuNode.Start(ctx))
	defer gpuNode.Stop(false)
	require.NoError(t, cpuNode.Start(ctx))
	defer cpuNode.Stop(false)
	require.NoError(t, workers.RegisterNode(ctx, e.Client, nodes.Record{ID: "gone-node", Hostname: "old", Queue: taskqueue.Node("gone-node")}))
	eventually(t, 10*time.Second, func() bool {
		nodes, err := workers.KnownNodes(ctx, e.Client)
		return err == nil && len(nodes) == 3
	}, "three registered nodes")

	run, err := e.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "inventory-e2e", TaskQueue: taskqueue.Control},
		nodeswf.NodeInventory, nodes.InventoryRequest{Wait: 2 * time.Second})
	require.NoError(t, err)
	var res nodes.InventoryResult
	require.NoError(t, run.Get(ctx, &res))
	require.Len(t, res.Nodes, 3)
	byID := map[string]nodes.Report{}
	for _, n := range res.Nodes {
		byID[n.NodeID] = n
	}
	assert.Equal(t, []string{"cpu-node", "gone-node", "gpu-node"}, []string{res.Nodes[0].NodeID, res.Nodes[1].NodeID, res.Nodes[2].NodeID})
	assert.Len(t, byID["gpu-node"].Inventory.GPUs, 2)
	assert.Equal(t, "NVIDIA H200", byID["gpu-node"].Inventory.Model())
	assert.Equal(t, "h200-box", byID["gpu-node"].Inventory.Hostname)
	assert.Empty(t, byID["cpu-node"].Inventory.GPUs)
	assert.Contains(t, byID["cpu-node"].Inventory.Reason, "no NVIDIA driver")
	assert.Contains(t, byID["gone-node"].Error, "unreachable")

	recordHistory(t, e.Client, "inventory-e2e", "node_inventory.json")
	recordHistory(t, e.Client, nodes.RegistryID, "node_registry.json")

	// A clean shutdown withdraws a node from the registry.
	cpuNode.Stop(true)
	eventually(t, 10*time.Second, func() bool {
		nodes, err := workers.KnownNodes(ctx, e.Client)
		return err == nil && len(nodes) == 2
	}, "deregistration")
}

// TestWorkflowsSurviveRestart stops the embedded server and starts it again on the same data
// directory: the registry workflow and what it knows must still be there.
func TestWorkflowsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	e := startServer(t, dir, false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	control := workers.NewControlWorker(e.Client)
	require.NoError(t, control.Start())
	require.NoError(t, workers.RegisterNode(ctx, e.Client, nodes.Record{ID: "survivor", Hostname: "h"}))
	eventually(t, 10*time.Second, func() bool {
		nodes, err := workers.KnownNodes(ctx, e.Client)
		return err == nil && len(nodes) == 1
	}, "registration")
	control.Stop()
	require.NoError(t, e.Stop(stopWithin))
	_, err := os.Stat(devserver.DatabaseFile(dir))
	require.NoError(t, err)

	e2 := startServer(t, dir, false)
	control2 := workers.NewControlWorker(e2.Client)
	require.NoError(t, control2.Start())
	defer control2.Stop()
	var nodes []nodes.Record
	eventually(t, 20*time.Second, func() bool {
		nodes, err = workers.KnownNodes(ctx, e2.Client)
		return err == nil && len(nodes) == 1
	}, "registry after restart")
	assert.Equal(t, "survivor", nodes[0].ID)
}

func TestPortInUseIsOneClearError(t *testing.T) {
	e := startServer(t, "", false)
	_, err := devserver.Start(devserver.Options{Port: portOf(t, e.Server.Address()), Headless: true, Logger: e.log})
	var inUse *devserver.PortInUseError
	require.True(t, errors.As(err, &inUse), "got %v", err)
	assert.Contains(t, err.Error(), "--port")
	assert.NotContains(t, err.Error(), "\n")
}

// recordHistory refreshes the committed replay histories when SCHOONER_RECORD_HISTORY=1.
// The replay tests in package workflows replay them on every run.
func recordHistory(t *testing.T, c client.Client, workflowID, file string) {
	if os.Getenv("SCHOONER_RECORD_HISTORY") != "1" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(h)
	require.NoError(t, err)
	path := filepath.Join("..", "workflows", "testdata", "replay", file)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, b, 0o644))
	t.Logf("recorded %d events of %s into %s", len(h.Events), workflowID, path)
}
