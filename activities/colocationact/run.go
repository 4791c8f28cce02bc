// Package colocationact implements the colocation domain's node activity (package
// colocation): a pair run on the node's own GPU under the launch shim.
package colocationact

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/colocation"
)

// PairRunner runs a pair on this machine's GPU, calling progress every window
// (gpu/colocate.Runner; a fake in tests).
type PairRunner interface {
	Run(ctx context.Context, pair colocation.Pair, progress func(colocation.Status)) (colocation.Result, error)
}

// Node runs colocated pairs on one node. Runner is nil on a node without an NVIDIA GPU (the
// simulated market's nodes).
type Node struct {
	NodeID string
	Runner PairRunner
}

// ErrNoGPU is the non-retryable answer of a node that has no GPU to share.
var ErrNoGPU = errors.New("this node agent has no NVIDIA GPU to colocate on")

// RunColocated runs the pair to the HP program's end, heartbeating its status every window
// (so the UI and `schooner colocate status` show it live, and a stuck node is noticed). A pair
// is not retried by the activity: a failure says why, and the HP program is the user's.
func (n *Node) RunColocated(ctx context.Context, pair colocation.Pair) (colocation.Result, error) {
	if n.Runner == nil {
		return colocation.Result{}, temporal.NewNonRetryableApplicationError(ErrNoGPU.Error(), "NoGPU", nil)
	}
	res, err := n.Runner.Run(ctx, pair, func(s colocation.Status) { activity.RecordHeartbeat(ctx, s) })
	if err != nil {
		return res, temporal.NewNonRetryableApplicationError(fmt.Sprintf("node %s: %v", n.NodeID, err), "ColocationFailed", err, res)
	}
	return res, nil
}
