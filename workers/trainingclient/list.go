package trainingclient

import (
	"context"
	"fmt"

	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers/wfclient"
)

// JobSummary is one job as the visibility store lists it (wfclient.Summary).
type JobSummary = wfclient.Summary

// ListOptions filter List.
type ListOptions struct {
	// Query is an extra visibility filter ANDed to WorkflowType='TrainingJob', e.g.
	// "SchoonerPhase='training'".
	Query string
	// Limit is the most jobs returned (50 when zero).
	Limit int
}

// List runs a visibility query over TrainingJob workflows, newest first as the server
// orders them.
func (c *Client) List(ctx context.Context, o ListOptions) ([]JobSummary, error) {
	jobs, err := wfclient.List(ctx, c.conn(), training.WorkflowTrainingJob, o.Query, o.Limit)
	if err != nil {
		return jobs, fmt.Errorf("listing training jobs: %w", err)
	}
	return jobs, nil
}
