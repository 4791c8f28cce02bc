// Package nodes is the contract of schooner's node domain, without Temporal: the names and
// payloads of the node registry and inventory workflows and of the activities they call. The
// workflows live in workflows/nodes, the activities in activities/nodes; both, and every
// client (the CLI, the node agents), speak only these types.
package nodes

import (
	"context"
	"time"

	"github.com/schooner-ml/schooner/gpu"
)

// Workflow type names.
const (
	WorkflowRegistry  = "NodeRegistry"
	WorkflowInventory = "NodeInventory"
)

// RegistryID is the workflow id of the single registry of node agents per namespace.
const RegistryID = "schooner-node-registry"

// Signal and query names of the node registry.
const (
	SignalRegister   = "register-node"
	SignalDeregister = "deregister-node"
	QueryNodes       = "nodes"
)

// Activity names: Inventory runs on a node's own queue, ListNodes on the control queue.
const (
	ActivityInventory = "Inventory"
	ActivityListNodes = "ListNodes"
)

// Record is what the registry knows about a node agent.
type Record struct {
	ID        string    `json:"id"`
	Hostname  string    `json:"hostname"`
	Queue     string    `json:"queue"`
	StartedAt time.Time `json:"started_at"`
	// LastRegistered is when the agent last (re)started and announced itself.
	LastRegistered time.Time `json:"last_registered"`
}

// RegistryState is carried across the registry's continue-as-new.
type RegistryState struct {
	Nodes []Record `json:"nodes"`
}

// InventoryRequest names the nodes to ask; empty means every node the registry knows.
type InventoryRequest struct {
	Nodes []string `json:"nodes,omitempty"`
	// Wait is how long a node may take to pick the request up before it is reported
	// unreachable (default 10 s).
	Wait time.Duration `json:"wait,omitempty"`
}

// Report is one row of the inventory's answer: the inventory, or why there is none.
type Report struct {
	NodeID    string        `json:"node_id"`
	Inventory gpu.Inventory `json:"inventory"`
	Error     string        `json:"error,omitempty"`
}

// InventoryResult is the answer of NodeInventory, in node id order.
type InventoryResult struct {
	Nodes []Report `json:"nodes"`
}

// NodeActivities run on one machine's node agent, on its own queue.
type NodeActivities interface {
	Inventory(ctx context.Context) (gpu.Inventory, error)
}

// ControlActivities run on the control queue.
type ControlActivities interface {
	ListNodes(ctx context.Context) ([]string, error)
}
