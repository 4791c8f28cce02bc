package nodesact

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/schooner-ml/schooner/nodes"
)

var (
	_ nodes.NodeActivities    = (*Node)(nil)
	_ nodes.ControlActivities = (*Registry)(nil)
)

// RegisterNode registers a node's own activities under their contract names.
func RegisterNode(r worker.ActivityRegistry, a nodes.NodeActivities) {
	r.RegisterActivityWithOptions(a.Inventory, activity.RegisterOptions{Name: nodes.ActivityInventory})
}

// RegisterControl registers the node domain's control-queue activities.
func RegisterControl(r worker.ActivityRegistry, a nodes.ControlActivities) {
	r.RegisterActivityWithOptions(a.ListNodes, activity.RegisterOptions{Name: nodes.ActivityListNodes})
}
