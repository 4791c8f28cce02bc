package sim

import (
	"context"
	"fmt"
	"slices"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
)

// DiscardUncommitted deletes checkpoint rank `rank`'s shards of every step after `after` that
// never became durable in the remote store. A saver calls it before its first save under a new
// plan: an earlier plan that was preempted mid-upload can leave shards of the very steps the
// new plan saves again, and the remote tier, which commits a step once ranks 0..world-1 all
// have a shard, could otherwise commit a step from one new shard and one stale shard of
// another layout (seen in TestBitExactAcrossPreemptionsAndReshapes before this existed). Only
// this plan's saver of the rank writes the rank's shards, so deleting them before it saves
// races with nobody. It returns the steps it cleaned.
//
// It knows the remote tier's key layout (checkpoint/remote_layout.go), which the checkpoint
// package does not export; TestDiscardUncommittedFollowsTheLayout keeps the two in step.
// Until checkpoint.Remote offers this itself, it lives here.
func DiscardUncommitted(ctx context.Context, st store.Store, rank int, after int64) ([]int64, error) {
	r := &checkpoint.Remote{Store: st}
	steps, err := r.Steps(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing steps to discard stale shards of rank %d: %w", rank, err)
	}
	var cleaned []int64
	for _, s := range steps {
		if s.Durable || s.Step <= after {
			continue
		}
		keys := []string{
			fmt.Sprintf("step-%012d/rank-%05d.meta", s.Step, rank),
			fmt.Sprintf("step-%012d/rank-%05d.data", s.Step, rank),
		}
		if !slices.Contains(s.Ranks, rank) {
			// Data without metadata (an upload cut short) cannot complete a step; leave the
			// listing alone unless there is something to delete.
			objs, err := st.List(ctx, keys[1])
			if err != nil || len(objs) == 0 {
				continue
			}
		}
		if err := st.Delete(ctx, keys...); err != nil {
			return cleaned, fmt.Errorf("discarding stale shard of rank %d step %d: %w", rank, s.Step, err)
		}
		cleaned = append(cleaned, s.Step)
	}
	return cleaned, nil
}
