// Package workflows holds schooner's Temporal workflow definitions and nothing else. Code
// here is deterministic: no I/O, no goroutines, no wall clock, no map iteration that
// decides anything. Activities are called by name so this package does not link their
// dependencies; the names and payload types are declared here, next to their callers.
package workflows

import "fmt"

// ControlQueue is the task queue of the control worker: workflows and the activities that
// talk to clouds and the planner.
const ControlQueue = "schooner-control"

// NodeQueue is the task queue of the node agent with id: activities that must run on that
// very machine (inventory, trainers, checkpoint agent).
func NodeQueue(nodeID string) string { return fmt.Sprintf("schooner-node-%s", nodeID) }

// Activity names, shared by the registration in package workers and the calls here.
const (
	ActivityInventory = "Inventory"
	ActivityListNodes = "ListNodes"
)

// NodeRegistryID is the workflow id of the single registry of node agents per namespace.
const NodeRegistryID = "schooner-node-registry"

// Signal and query names of the node registry.
const (
	SignalRegisterNode   = "register-node"
	SignalDeregisterNode = "deregister-node"
	QueryNodes           = "nodes"
)
