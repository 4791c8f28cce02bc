package nodeswf

import (
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/taskqueue"
)

// Answer is one node's answer to AskEach: the activity's result, or its error.
type Answer[T any] struct {
	NodeID string
	// Result is nil when the activity failed.
	Result *T
	Err    error
}

// Value is the result, or T's zero value when the activity failed.
func (a Answer[T]) Value() T {
	if a.Result == nil {
		var zero T
		return zero
	}
	return *a.Result
}

// Describe is the failure as describe words it for a report; empty when the node answered.
func (a Answer[T]) Describe(describe func(error) string) string {
	if a.Err == nil {
		return ""
	}
	return describe(a.Err)
}

// AskEach runs activity (with args) on every node of ids in parallel, each on the node's own
// queue with opts and the summary summary+id, and returns every node's answer in ids' order.
// A node that fails does not fail the others: one dead agent must not hide the healthy ones.
func AskEach[T any](ctx workflow.Context, ids []string, opts workflow.ActivityOptions, summary, activity string, args ...any) []Answer[T] {
	futures := make([]workflow.Future, len(ids))
	for i, id := range ids {
		o := opts
		o.TaskQueue, o.Summary = taskqueue.Node(id), summary+id
		futures[i] = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, o), activity, args...)
	}
	answers := make([]Answer[T], len(ids))
	for i, f := range futures {
		answers[i].NodeID = ids[i]
		var v T
		if answers[i].Err = f.Get(ctx, &v); answers[i].Err == nil {
			answers[i].Result = &v
		}
	}
	return answers
}
