// Package jobs follows the training jobs a benchmark submitted until they close.
package jobs

import (
	"context"

	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers/trainingclient"
)

// CollectClosed makes one pass over ids: every job not yet in done that has closed goes into
// done with its final status. The status query answers for closed jobs too, failed ones
// included (their result is an error, not a status); where it fails, the status says so.
func CollectClosed(ctx context.Context, c *trainingclient.Client, ids []string, done map[string]training.JobStatus) {
	for _, id := range ids {
		if _, ok := done[id]; ok {
			continue
		}
		if closed, err := c.Closed(ctx, id); err != nil || !closed {
			continue
		}
		st, err := c.Status(ctx, id)
		if err != nil {
			st = training.JobStatus{JobID: id, Error: "querying its status: " + err.Error()}
		}
		done[id] = st
	}
}
