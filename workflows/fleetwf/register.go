// Package fleetwf holds the Fleet child workflow, which acquires a job's instances group by
// group in parallel. Its contract is package fleet.
package fleetwf

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/fleet"
)

// Register registers Fleet under its stable name on a worker or a replayer.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(Fleet, workflow.RegisterOptions{Name: fleet.WorkflowFleet})
}
