package fleetact

import (
	"go.temporal.io/sdk/worker"

	"github.com/schooner-ml/schooner/activities/internal/register"
	"github.com/schooner-ml/schooner/fleet"
)

// Register registers the instance activities under their contract names. Tests pass a
// stand-in of the same interface, so their signatures cannot drift from production's.
func Register(r worker.ActivityRegistry, a fleet.Activities) {
	register.Named(r, map[string]any{
		fleet.ActivityAcquireInstances:  a.AcquireInstances,
		fleet.ActivityDescribeInstances: a.DescribeInstances,
		fleet.ActivityReleaseInstances:  a.ReleaseInstances,
		fleet.ActivityListJobInstances:  a.ListJobInstances,
		fleet.ActivityTimeScale:         a.TimeScale,
	})
}
