// Package interferencewf holds the interference domain's workflow: a study on one or many
// nodes. Its contract is package interference.
package interferencewf

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/interference"
	"github.com/schooner-ml/schooner/workflows/nodeswf"
)

// studyTimeout bounds one node's study: the largest request (every pair, every mechanism,
// 50 repeats of 100000 requests) is far past it, a real one (minutes) far below.
const studyTimeout = 6 * time.Hour

// InterferenceStudy runs the study on every node asked (every registered node when none is
// named) in parallel, each on the node's own queue, and returns each node's study or why
// there is none. The input is validated first, failing at once with the field named. A node
// that does not pick the study up within Wait is reported unreachable; one whose GPU stops
// answering is caught by the heartbeat timeout. A study is not retried: it holds a GPU for
// minutes, and a failed one says why.
func InterferenceStudy(ctx workflow.Context, in interference.StudyInput) (interference.StudyResult, error) {
	in = in.WithDefaults()
	if err := in.Validate(); err != nil {
		return interference.StudyResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidInput", nil)
	}
	ids, err := nodeswf.Targets(ctx, in.Nodes)
	if err != nil {
		return interference.StudyResult{}, err
	}
	answers := nodeswf.AskEach[interference.Study](ctx, ids, workflow.ActivityOptions{
		ScheduleToStartTimeout: in.Wait,
		StartToCloseTimeout:    studyTimeout,
		HeartbeatTimeout:       2 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	}, "interference study on node ", interference.ActivityProfile, in.Request)
	out := interference.StudyResult{Nodes: make([]interference.NodeStudy, len(ids))}
	for i, a := range answers {
		out.Nodes[i] = interference.NodeStudy{NodeID: a.NodeID, Study: a.Result, Error: a.Describe(describe)}
	}
	return out, nil
}

// describe is a failed node activity as a report line (nodeswf.DescribeLongNodeActivity).
func describe(err error) string {
	return nodeswf.DescribeLongNodeActivity(err, "the node stopped reporting progress (its GPU or agent is stuck)")
}
