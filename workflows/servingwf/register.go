// Package servingwf holds the ServingDeployment workflow: place, acquire and start an LLM
// serving pipeline on spot machines and keep every stage ready through preemptions
// (DéjàVu-style: a replacement restores its KV cache from the ring replica instead of
// recomputing). Its contract (input, status, messages, activities) is package serving; this
// package is the only Temporal code of it.
package servingwf

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/serving"
)

// Register registers ServingDeployment under its stable name on a worker or a replayer.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(ServingDeployment, workflow.RegisterOptions{Name: serving.WorkflowServingDeployment})
}
