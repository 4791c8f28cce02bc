// Package servingact implements a ServingDeployment's activities (package serving's
// ControlActivities; NodeActivities are the node agent's, registered through RegisterNode).
// They stay thin: the offerings filter is fleetact's, shared with training.
package servingact

import (
	"go.temporal.io/sdk/worker"

	"github.com/schooner-ml/schooner/activities/internal/register"
	"github.com/schooner-ml/schooner/serving"
)

var (
	_ serving.ControlActivities = (*Control)(nil)
	_ serving.NodeActivities    = (*Node)(nil)
)

// RegisterControl registers the deployment's control-queue activities under their contract
// names. Tests pass a stand-in of the same interface, so signatures cannot drift.
func RegisterControl(r worker.ActivityRegistry, a serving.ControlActivities) {
	register.Named(r, map[string]any{serving.ActivityOfferings: a.Offerings})
}

// RegisterNode registers RunStage on a node agent's own queue.
func RegisterNode(r worker.ActivityRegistry, a serving.NodeActivities) {
	register.Named(r, map[string]any{serving.ActivityRunStage: a.RunStage})
}
