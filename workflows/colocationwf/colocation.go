// Package colocationwf holds the colocation domain's workflow: place a best-effort program
// beside a latency-critical one on a node's GPU, from the interference results, and run the
// pair there. Its contract is package colocation.
package colocationwf

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/colocation"
	"github.com/schooner-ml/schooner/gpu/colocate/placement"
	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/workflows/nodeswf"
)

// pairTimeout bounds one pair's run: the HP side is typically a server that runs for days.
const pairTimeout = 30 * 24 * time.Hour

// Colocation validates its input (failing at once, the field named), decides placement from
// the node's interference study (unless forced), then runs the pair on the node's own queue to
// the HP program's end. The status query answers the phase, the placement's reason and, once
// done, the result; the running pair's counters are the activity's heartbeats. A refused pair
// fails non-retryably with the reason; a pair is not retried (the node's runtime already
// throttles and evicts the BE side, and the HP program is the user's).
func Colocation(ctx workflow.Context, in colocation.Input) (colocation.Result, error) {
	in = in.WithDefaults()
	st := colocation.WorkflowStatus{Phase: colocation.Placing, Node: in.Node}
	if err := workflow.SetQueryHandler(ctx, colocation.QueryStatus, func() (colocation.WorkflowStatus, error) { return st, nil }); err != nil {
		return colocation.Result{}, err
	}
	if err := in.Validate(); err != nil {
		st.Phase, st.Error = colocation.Failed, err.Error()
		return colocation.Result{}, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidInput", nil)
	}
	if in.Force {
		st.Placement = "forced: placed without interference evidence"
	} else {
		d := placement.Place(*in.Study, in.Kinds, in.Pair.Params.TargetSlowdown)
		st.Placement = d.Reason
		if !d.Allowed {
			st.Phase = colocation.Refused
			return colocation.Result{}, temporal.NewNonRetryableApplicationError("placement refused: "+d.Reason, "Refused", nil)
		}
	}
	st.Phase, st.Started = colocation.OnNode, workflow.Now(ctx)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              taskqueue.Node(in.Node),
		ScheduleToStartTimeout: in.Wait,
		StartToCloseTimeout:    pairTimeout,
		HeartbeatTimeout:       max(time.Minute, 10*in.Pair.Params.Window),
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary:                "colocated pair on node " + in.Node,
	})
	var res colocation.Result
	if err := workflow.ExecuteActivity(actx, colocation.ActivityRunColocated, in.Pair).Get(ctx, &res); err != nil {
		st.Phase, st.Error = colocation.Failed, describe(err)
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.HasDetails() {
			var partial colocation.Result
			if app.Details(&partial) == nil {
				st.Result = &partial
			}
		}
		return colocation.Result{}, temporal.NewNonRetryableApplicationError(st.Error, "ColocationFailed", nil)
	}
	st.Phase, st.Result = colocation.Done, &res
	return res, nil
}

// describe is a failed node activity as a report line (nodeswf.DescribeLongNodeActivity).
func describe(err error) string {
	return nodeswf.DescribeLongNodeActivity(err, "the node stopped reporting the pair's progress (its GPU or agent is stuck)")
}
