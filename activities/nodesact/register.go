package nodesact

import (
	"go.temporal.io/sdk/worker"

	"github.com/schooner-ml/schooner/activities/internal/register"
	"github.com/schooner-ml/schooner/nodes"
)

var (
	_ nodes.NodeActivities    = (*Node)(nil)
	_ nodes.ControlActivities = (*Registry)(nil)
)

// RegisterNode registers a node's own activities under their contract names.
func RegisterNode(r worker.ActivityRegistry, a nodes.NodeActivities) {
	register.Named(r, map[string]any{nodes.ActivityInventory: a.Inventory})
}

// RegisterControl registers the node domain's control-queue activities.
func RegisterControl(r worker.ActivityRegistry, a nodes.ControlActivities) {
	register.Named(r, map[string]any{nodes.ActivityListNodes: a.ListNodes})
}
