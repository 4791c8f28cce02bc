package workflows

import (
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/gpu"
)

// InventoryRequest names the nodes to ask; empty means every node the registry knows.
type InventoryRequest struct {
	Nodes []string `json:"nodes,omitempty"`
	// Wait is how long a node may take to pick the request up before it is reported
	// unreachable (default 10 s).
	Wait time.Duration `json:"wait,omitempty"`
}

// NodeReport is one row of the answer: the inventory, or why there is none.
type NodeReport struct {
	NodeID    string        `json:"node_id"`
	Inventory gpu.Inventory `json:"inventory"`
	Error     string        `json:"error,omitempty"`
}

// InventoryResult is the answer of NodeInventory, in node id order.
type InventoryResult struct {
	Nodes []NodeReport `json:"nodes"`
}

// NodeInventory asks every node agent for its GPUs in parallel. Each request goes to the
// node's own task queue, so it is answered by that machine's NVML and nobody else's. A node
// that does not pick the task up in time is reported as unreachable rather than failing the
// whole workflow: one dead agent must not hide the healthy ones.
func NodeInventory(ctx workflow.Context, req InventoryRequest) (InventoryResult, error) {
	ids := req.Nodes
	if len(ids) == 0 {
		lctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue:           ControlQueue,
			StartToCloseTimeout: 30 * time.Second,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
		})
		if err := workflow.ExecuteActivity(lctx, ActivityListNodes).Get(ctx, &ids); err != nil {
			return InventoryResult{}, err
		}
	}
	wait := req.Wait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	futures := make([]workflow.Future, len(ids))
	for i, id := range ids {
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue:              NodeQueue(id),
			ScheduleToStartTimeout: wait,
			StartToCloseTimeout:    30 * time.Second,
			RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
			Summary:                "GPU inventory of node " + id,
		})
		futures[i] = workflow.ExecuteActivity(actx, ActivityInventory)
	}
	out := InventoryResult{Nodes: make([]NodeReport, len(ids))}
	for i, f := range futures {
		out.Nodes[i].NodeID = ids[i]
		var inv gpu.Inventory
		if err := f.Get(ctx, &inv); err != nil {
			out.Nodes[i].Error = describeNodeError(err)
			continue
		}
		out.Nodes[i].Inventory = inv
	}
	return out, nil
}

func describeNodeError(err error) string {
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) && timeout.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
		return "unreachable: no agent polled its queue in time"
	}
	return err.Error()
}
