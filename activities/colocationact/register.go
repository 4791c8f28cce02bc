package colocationact

import (
	"go.temporal.io/sdk/worker"

	"github.com/schooner-ml/schooner/activities/internal/register"
	"github.com/schooner-ml/schooner/colocation"
)

var _ colocation.NodeActivities = (*Node)(nil)

// RegisterNode registers a node's colocation activity under its contract name.
func RegisterNode(r worker.ActivityRegistry, a colocation.NodeActivities) {
	register.Named(r, map[string]any{colocation.ActivityRunColocated: a.RunColocated})
}
