package colocationwf

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/colocation"
)

// Register registers the colocation workflow under its stable name on a worker or a replayer.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(Colocation, workflow.RegisterOptions{Name: colocation.WorkflowColocation})
}
