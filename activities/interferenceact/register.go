package interferenceact

import (
	"go.temporal.io/sdk/worker"

	"github.com/schooner-ml/schooner/activities/internal/register"
	"github.com/schooner-ml/schooner/interference"
)

var _ interference.NodeActivities = (*Profiler)(nil)

// RegisterNode registers a node's interference activity under its contract name.
func RegisterNode(r worker.ActivityRegistry, a interference.NodeActivities) {
	register.Named(r, map[string]any{interference.ActivityProfile: a.ProfileInterference})
}
