package devserver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
)

// A heartbeat whose caller goes away mid-call is finished within the caller's deadline; a
// poll ends with its caller.
func TestAWriteOutlivesItsCallerAndAPollDoesNot(t *testing.T) {
	call := func(method string) (cancelled bool, deadline time.Time) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		want, _ := ctx.Deadline()
		started, done := make(chan struct{}), make(chan struct{})
		go func() {
			_, _ = finishAbandonedWrites(ctx, nil, &grpc.UnaryServerInfo{FullMethod: "/temporal.api.workflowservice.v1.WorkflowService/" + method},
				func(hctx context.Context, _ any) (any, error) {
					close(started)
					<-time.After(50 * time.Millisecond) // the caller is gone by now
					cancelled = hctx.Err() != nil
					deadline, _ = hctx.Deadline()
					close(done)
					return nil, nil
				})
		}()
		<-started
		cancel()
		<-done
		require.Equal(t, want, deadline, "%s keeps its caller's deadline", method)
		return cancelled, deadline
	}
	for _, m := range []string{"RecordActivityTaskHeartbeat", "RespondWorkflowTaskCompleted", "SignalWorkflowExecution"} {
		cancelled, _ := call(m)
		assert.False(t, cancelled, "%s finishes without its caller", m)
	}
	for _, m := range []string{"PollWorkflowTaskQueue", "PollActivityTaskQueue", "GetWorkflowExecutionHistory", "QueryWorkflow"} {
		cancelled, _ := call(m)
		assert.True(t, cancelled, "%s ends with its caller", m)
	}
}

// A detached call whose caller set no deadline gets abandonedWriteLimit.
func TestADetachedWriteWithoutADeadlineIsBounded(t *testing.T) {
	var got time.Time
	_, err := finishAbandonedWrites(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/x.WorkflowService/StartWorkflowExecution"},
		func(hctx context.Context, _ any) (any, error) {
			got, _ = hctx.Deadline()
			return nil, nil
		})
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(abandonedWriteLimit), got, 5*time.Second)
}
