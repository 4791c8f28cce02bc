// Package register registers activities under their contract names, the one way every
// activity package does it: a workflow calls an activity by the name its domain package
// declares, never by a Go method name that a rename could change.
package register

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
)

// Named registers each function of byName on r under its key, the contract's activity name.
func Named(r worker.ActivityRegistry, byName map[string]any) {
	for name, fn := range byName {
		r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}
