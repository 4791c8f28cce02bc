package trainingclient

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/schooner-ml/schooner/training"
)

// Status asks a job for its status (the workflow's status query). A job that has closed and
// has no worker left to answer the query answers with its result instead. A failed query is
// an error, never a zero status.
func (c *Client) Status(ctx context.Context, id string) (training.JobStatus, error) {
	qctx, cancel := context.WithTimeout(ctx, c.rpcTimeout())
	defer cancel()
	v, err := c.Temporal.QueryWorkflow(qctx, id, "", training.QueryStatus)
	if err == nil {
		var st training.JobStatus
		if err := v.Get(&st); err != nil {
			return training.JobStatus{}, fmt.Errorf("decoding status of %s: %w", id, err)
		}
		return st, nil
	}
	if closed, cerr := c.Closed(ctx, id); cerr == nil && closed {
		rctx, cancel := context.WithTimeout(ctx, c.rpcTimeout())
		defer cancel()
		if st, rerr := c.Result(rctx, id); rerr == nil {
			return st, nil
		}
	}
	return training.JobStatus{}, fmt.Errorf("querying status of %s: %w", id, err)
}

// Result waits until the job's workflow closes and returns its result: the final status, or
// the error the job failed with (a cancelled job's is a cancellation error).
func (c *Client) Result(ctx context.Context, id string) (training.JobStatus, error) {
	var st training.JobStatus
	if err := c.Temporal.GetWorkflow(ctx, id, "").Get(ctx, &st); err != nil {
		return training.JobStatus{}, fmt.Errorf("job %s: %w", id, err)
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
	return s != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && s != enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW, nil
}

// State is the Temporal status of the job's workflow (running, completed, failed, canceled...).
func (c *Client) State(ctx context.Context, id string) (enumspb.WorkflowExecutionStatus, error) {
	dctx, cancel := context.WithTimeout(ctx, c.rpcTimeout())
	defer cancel()
	d, err := c.Temporal.DescribeWorkflowExecution(dctx, id, "")
	if err != nil {
		return enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED, fmt.Errorf("describing job %s: %w", id, err)
	}
	return d.GetWorkflowExecutionInfo().GetStatus(), nil
}
