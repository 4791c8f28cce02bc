// Package nodeswf holds the node domain's workflows: the registry of node agents and the
// inventory that asks each of them for its GPUs. Their contract is package nodes.
package nodeswf

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/nodes"
)

// Register registers the node workflows under their stable names on a worker or a replayer,
// so production and the replay tests run exactly the same definitions.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(NodeRegistry, workflow.RegisterOptions{Name: nodes.WorkflowRegistry})
	r.RegisterWorkflowWithOptions(NodeInventory, workflow.RegisterOptions{Name: nodes.WorkflowInventory})
}
