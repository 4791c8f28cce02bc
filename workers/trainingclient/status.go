package trainingclient

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers/wfclient"
)

// Status asks a job for its status (the workflow's status query). When no worker answers in
// time (a control plane too busy to run the query, none left for a closed job), it answers
// with the job's result, or else with the status the job last published in its memo, marked
// Stale. With neither, it is an error, never a zero status (wfclient.Status).
func (c *Client) Status(ctx context.Context, id string) (training.JobStatus, error) {
	st, stale, err := wfclient.Status[training.JobStatus](ctx, c.conn(), id, training.QueryStatus, training.MemoStatus)
	st.Stale = stale
	return st, err
}

// Result waits until the job's workflow closes and returns its result: the final status, or
// the error the job failed with (a cancelled job's is a cancellation error).
func (c *Client) Result(ctx context.Context, id string) (training.JobStatus, error) {
	st, err := wfclient.Result[training.JobStatus](ctx, c.conn(), id)
	if err != nil {
		return st, fmt.Errorf("job %w", err)
	}
	return st, nil
}

// Closed says whether the job's workflow (the latest run of its id) has ended.
// Continue-as-new is not an end: the id goes on in a new run.
func (c *Client) Closed(ctx context.Context, id string) (bool, error) {
	s, err := c.State(ctx, id)
	if err != nil {
		return false, err
	}
	return wfclient.IsClosed(s), nil
}

// State is the Temporal status of the job's workflow (running, completed, failed, canceled...).
func (c *Client) State(ctx context.Context, id string) (enumspb.WorkflowExecutionStatus, error) {
	info, err := wfclient.Describe(ctx, c.conn(), id)
	if err != nil {
		return enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED, err
	}
	return info.GetStatus(), nil
}
