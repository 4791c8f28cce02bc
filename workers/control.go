package workers

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/activities"
	"github.com/schooner-ml/schooner/workflows"
)

// NewControlWorker builds the worker of the schooner-control queue: every workflow, and the
// activities that run in the control plane. Later parts (cloud, planner, fleet) register
// here too, so one `schooner worker control` process serves them all.
func NewControlWorker(c client.Client) worker.Worker {
	w := worker.New(c, workflows.ControlQueue, worker.Options{})
	RegisterControl(w, c)
	return w
}

// RegisterControl registers the control workflows and activities on any registry; the
// replay tests use it to be sure they replay exactly what production runs.
func RegisterControl(r worker.Registry, c client.Client) {
	RegisterWorkflows(r)
	reg := &activities.Registry{Known: KnownNodeIDs(c)}
	r.RegisterActivityWithOptions(reg.ListNodes, activity.RegisterOptions{Name: workflows.ActivityListNodes})
}

// RegisterWorkflows registers every workflow under its stable name.
func RegisterWorkflows(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(workflows.NodeRegistry, workflow.RegisterOptions{Name: "NodeRegistry"})
	r.RegisterWorkflowWithOptions(workflows.NodeInventory, workflow.RegisterOptions{Name: "NodeInventory"})
}
