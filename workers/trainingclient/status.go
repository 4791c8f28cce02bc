package trainingclient

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"

	"github.com/schooner-ml/schooner/training"
)

// Status asks a job for its status (the workflow's status query). When no worker answers in
// time (a control plane too busy to run the query, none left for a closed job), it answers
// with the job's result, or else with the status the job last published in its memo, marked
// Stale. With neither, it is an error, never a zero status.
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
	info, derr := c.describe(ctx, id)
	if derr == nil && isClosed(info.GetStatus()) {
		rctx, cancel := context.WithTimeout(ctx, c.rpcTimeout())
		defer cancel()
		if st, rerr := c.Result(rctx, id); rerr == nil {
			return st, nil
		}
	}
	if derr == nil {
		if st, ok := published(info); ok {
			return st, nil
		}
	}
	return training.JobStatus{}, fmt.Errorf("querying status of %s: %w", id, err)
}

// published is the status the job last published in its memo (training.MemoStatus), marked
// Stale: what the server knows of the job without a worker.
func published(info *workflowpb.WorkflowExecutionInfo) (training.JobStatus, bool) {
	p, ok := info.GetMemo().GetFields()[training.MemoStatus]
	if !ok {
		return training.JobStatus{}, false
	}
	var st training.JobStatus
	if err := converter.GetDefaultDataConverter().FromPayload(p, &st); err != nil {
		return training.JobStatus{}, false
	}
	st.Stale = true
	return st, true
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
	return isClosed(s), nil
}

// isClosed: the job's workflow ended (continue-as-new is not an end).
func isClosed(s enumspb.WorkflowExecutionStatus) bool {
	return s != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && s != enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW
}

// State is the Temporal status of the job's workflow (running, completed, failed, canceled...).
func (c *Client) State(ctx context.Context, id string) (enumspb.WorkflowExecutionStatus, error) {
	info, err := c.describe(ctx, id)
	if err != nil {
		return enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED, err
	}
	return info.GetStatus(), nil
}

// describe is the server's record of the job's latest run.
func (c *Client) describe(ctx context.Context, id string) (*workflowpb.WorkflowExecutionInfo, error) {
	dctx, cancel := context.WithTimeout(ctx, c.rpcTimeout())
	defer cancel()
	d, err := c.Temporal.DescribeWorkflowExecution(dctx, id, "")
	if err != nil {
		return nil, fmt.Errorf("describing job %s: %w", id, err)
	}
	return d.GetWorkflowExecutionInfo(), nil
}
