// Package taskqueue names schooner's Temporal task queues. Every domain routes work by these
// names: the control worker serves Control, and each machine's node agent serves its own Node
// queue, so an activity scheduled there runs on that very machine.
package taskqueue

import "fmt"

// Control is the task queue of the control workers: every workflow, and the activities that
// talk to clouds and the planner.
const Control = "schooner-control"

// Node is the task queue of the node agent with id: activities that must run on that very
// machine (inventory, trainers, checkpoint agent).
func Node(nodeID string) string { return fmt.Sprintf("schooner-node-%s", nodeID) }
