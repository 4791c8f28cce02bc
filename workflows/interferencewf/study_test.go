package interferencewf

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/interference"
	"github.com/schooner-ml/schooner/nodes"
	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/workflows/internal/wftest"
)

// standIns are the study's activities' stand-ins, which the tests mock.
var standIns = map[string]any{nodes.ActivityListNodes: wftest.StandIn[[]string](), interference.ActivityProfile: wftest.StandIn1[interference.StudyRequest, interference.Study]()}

func request() interference.StudyRequest {
	return interference.StudyRequest{Pairs: []interference.Pair{{LC: "decode-chain", BE: "gemm"}},
		Mechanisms: []interference.Mechanism{{Kind: interference.Streams}}}
}

func TestAStudyAsksEveryNodeAndSaysWhyOneHasNoStudy(t *testing.T) {
	env := wftest.NewEnv(standIns)
	env.OnActivity(nodes.ActivityListNodes, mock.Anything).Return([]string{"a", "b", "c", "d"}, nil).Once()
	var got interference.StudyRequest
	env.OnActivity(interference.ActivityProfile, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, req interference.StudyRequest) (interference.Study, error) {
			switch activity.GetInfo(ctx).TaskQueue {
			case taskqueue.Node("b"):
				return interference.Study{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
			case taskqueue.Node("c"):
				return interference.Study{}, temporal.NewNonRetryableApplicationError("no interference executor", "NoExecutor", nil)
			case taskqueue.Node("d"):
				return interference.Study{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
			}
			got = req
			return interference.Study{Version: interference.FormatVersion, Node: "a", GPU: interference.GPUInfo{Model: "H200"}}, nil
		})
	env.ExecuteWorkflow(InterferenceStudy, interference.StudyInput{Request: request()})
	res := wftest.Result[interference.StudyResult](t, env)
	require.Len(t, res.Nodes, 4)
	assert.Equal(t, "H200", res.Nodes[0].Study.GPU.Model)
	assert.Equal(t, 200, got.Requests, "the request reaches the node with its defaults")
	assert.Contains(t, res.Nodes[1].Error, "unreachable")
	assert.Nil(t, res.Nodes[1].Study)
	assert.Equal(t, "no interference executor", res.Nodes[2].Error)
	assert.Contains(t, res.Nodes[3].Error, "stopped reporting progress")
	env.AssertExpectations(t)
}

func TestABadStudyFailsAtOnceNamingTheField(t *testing.T) {
	env := wftest.NewEnv(standIns)
	in := interference.StudyInput{Nodes: []string{"a", "a"}, Request: request()}
	in.Request.Repeats = 99
	env.ExecuteWorkflow(InterferenceStudy, in)
	app, err := wftest.Failure(t, env)
	assert.Contains(t, err.Error(), "nodes[1]: a twice")
	assert.Contains(t, err.Error(), "request: repeats: 99 is not in [1, 50]")
	assert.True(t, app.NonRetryable())
}
