package devserver

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc"
)

// A caller that goes away in the middle of a call (a worker stopping, a simulated machine
// preempted while its activity heartbeats) cancels the call's context, and the server passes
// that context down to its persistence write. A write cancelled half way has an unknown
// outcome to the history service, which then re-acquires its shard to find out; with the one
// shard of the embedded server, every workflow of the server waits for that ("shard status
// unknown"), and an ERR line ("Update workflow execution operation failed: context canceled")
// says something failed that the caller no longer cared about. So the calls that only write
// (heartbeats, task completions, signals, starts, cancels) finish what they began without
// their caller, within the caller's own deadline (abandonedWriteLimit when it gave none).
// Long polls and reads keep their caller's cancellation: a poll nobody waits for must end,
// or the task it would take goes to a poller that is gone.

// abandonedWriteLimit bounds a detached call whose caller set no deadline.
const abandonedWriteLimit = 30 * time.Second

// detachedCalls are the WorkflowService methods finished without their caller.
var detachedCalls = map[string]bool{
	"RecordActivityTaskHeartbeat":      true,
	"RecordActivityTaskHeartbeatById":  true,
	"RespondActivityTaskCompleted":     true,
	"RespondActivityTaskCompletedById": true,
	"RespondActivityTaskFailed":        true,
	"RespondActivityTaskFailedById":    true,
	"RespondActivityTaskCanceled":      true,
	"RespondActivityTaskCanceledById":  true,
	"RespondWorkflowTaskCompleted":     true,
	"RespondWorkflowTaskFailed":        true,
	"RespondQueryTaskCompleted":        true,
	"SignalWorkflowExecution":          true,
	"SignalWithStartWorkflowExecution": true,
	"StartWorkflowExecution":           true,
	"RequestCancelWorkflowExecution":   true,
	"TerminateWorkflowExecution":       true,
}

// finishAbandonedWrites is the frontend interceptor that detaches detachedCalls from their
// caller's cancellation.
func finishAbandonedWrites(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !detachedCalls[info.FullMethod[strings.LastIndexByte(info.FullMethod, '/')+1:]] {
		return handler(ctx, req)
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(abandonedWriteLimit)
	}
	detached, cancel := context.WithDeadline(context.WithoutCancel(ctx), dl)
	defer cancel()
	return handler(detached, req)
}
