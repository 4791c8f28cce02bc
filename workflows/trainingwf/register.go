// Package trainingwf holds the TrainingJob workflow: plan on what can be had, acquire,
// train, and replan, relaunch and restore on every preemption. Its contract (inputs, status,
// messages, activities) is package training; this package is the only Temporal code of it.
package trainingwf

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/training"
)

// Register registers TrainingJob under its stable name on a worker or a replayer.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(TrainingJob, workflow.RegisterOptions{Name: training.WorkflowTrainingJob})
}
