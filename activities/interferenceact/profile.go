// Package interferenceact implements the interference domain's node activity (package
// interference): a study on the node's own GPU, through the node's executor.
package interferenceact

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	gi "github.com/schooner-ml/schooner/gpu/interference"
	"github.com/schooner-ml/schooner/interference"
)

// Profiler runs studies on one node. Executor is nil on a node agent without a GPU (the
// simulated market's nodes use a model).
type Profiler struct {
	NodeID   string
	Executor gi.Executor
}

// ErrNoExecutor is the non-retryable answer of a node without an executor.
var ErrNoExecutor = errors.New("this node agent has no interference executor: it has no NVIDIA GPU")

// ProfileInterference runs req and returns the study, heartbeating each run as it starts (so a
// stuck GPU is noticed by the heartbeat timeout, and the UI shows how far the study is).
func (p *Profiler) ProfileInterference(ctx context.Context, req interference.StudyRequest) (interference.Study, error) {
	if p.Executor == nil {
		return interference.Study{}, temporal.NewNonRetryableApplicationError(ErrNoExecutor.Error(), "NoExecutor", nil)
	}
	st, err := gi.RunStudy(ctx, p.Executor, req, func(done, total int, what string) {
		activity.RecordHeartbeat(ctx, fmt.Sprintf("%d/%d %s", done, total, what))
	})
	st.Node = p.NodeID
	if err != nil {
		return interference.Study{}, fmt.Errorf("node %s: %w", p.NodeID, err)
	}
	return st, nil
}
