package nodeswf

import (
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/nodes"
	"github.com/schooner-ml/schooner/taskqueue"
)

// NodeInventory asks every node agent for its GPUs in parallel. Each request goes to the
// node's own task queue, so it is answered by that machine's NVML and nobody else's. A node
// that does not pick the task up in time is reported as unreachable rather than failing the
// whole workflow: one dead agent must not hide the healthy ones.
func NodeInventory(ctx workflow.Context, req nodes.InventoryRequest) (nodes.InventoryResult, error) {
	ids, err := Targets(ctx, req.Nodes)
	if err != nil {
		return nodes.InventoryResult{}, err
	}
	wait := req.Wait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	answers := AskEach[gpu.Inventory](ctx, ids, workflow.ActivityOptions{
		ScheduleToStartTimeout: wait,
		StartToCloseTimeout:    30 * time.Second,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	}, "GPU inventory of node ", nodes.ActivityInventory)
	out := nodes.InventoryResult{Nodes: make([]nodes.Report, len(ids))}
	for i, a := range answers {
		out.Nodes[i] = nodes.Report{NodeID: a.NodeID, Inventory: a.Value(), Error: a.Describe(DescribeNodeError)}
	}
	return out, nil
}

// Targets is the nodes a fan-out workflow asks: those named, else every registered node (the
// ListNodes activity on the control queue).
func Targets(ctx workflow.Context, named []string) ([]string, error) {
	if len(named) > 0 {
		return named, nil
	}
	lctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           taskqueue.Control,
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var ids []string
	err := workflow.ExecuteActivity(lctx, nodes.ActivityListNodes).Get(ctx, &ids)
	return ids, err
}

// DescribeNodeError is a node's failed activity as a report line: a node whose agent did not
// pick the task up is unreachable; otherwise the error.
func DescribeNodeError(err error) string {
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) && timeout.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
		return "unreachable: no agent polled its queue in time"
	}
	return err.Error()
}

// DescribeLongNodeActivity is a failed long-running node activity (one that heartbeats) as a
// report line: stuck (the heartbeat timeout) says stuck, the activity's own error its message,
// an unreachable node that it is.
func DescribeLongNodeActivity(err error, stuck string) string {
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) && timeout.TimeoutType() == enumspb.TIMEOUT_TYPE_HEARTBEAT {
		return stuck
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	return DescribeNodeError(err)
}
