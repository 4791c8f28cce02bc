package interferencewf

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/interference"
)

// Register registers the interference workflow under its stable name on a worker or a replayer.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(InterferenceStudy, workflow.RegisterOptions{Name: interference.WorkflowStudy})
}
