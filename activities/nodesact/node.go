// Package nodesact implements the node domain's activities (package nodes): a machine's GPU
// inventory on its own queue, and the list of registered node agents on the control queue.
package nodesact

import (
	"context"
	"time"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/gpu/nvml"
)

// Node holds the activities that run on one machine's node agent.
type Node struct {
	ID       string
	Hostname string
	GPUs     nvml.Library
	// Now is the clock (default time.Now); tests pin it.
	Now func() time.Time
}

// Inventory reports this machine's GPUs and a telemetry sample through NVML.
func (n *Node) Inventory(ctx context.Context) (gpu.Inventory, error) {
	now := time.Now
	if n.Now != nil {
		now = n.Now
	}
	return nvml.Discover(n.GPUs, n.ID, n.Hostname, now().UTC()), nil
}
