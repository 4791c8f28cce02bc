// Package wfclient is what every typed client of a schooner workflow (a training job, a
// serving deployment) does the same way: query its status with a bound on the wait, fall back
// to the status the workflow published in its memo when no worker answers, tell whether it
// has closed, and read its result. The typed clients (workers/trainingclient,
// workers/servingclient) add their workflow's names and types.
package wfclient

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// DefaultRPCTimeout bounds one query or describe call when a client sets none.
const DefaultRPCTimeout = 10 * time.Second

// Conn is a Temporal client with the bound on each call.
type Conn struct {
	Temporal   client.Client
	RPCTimeout time.Duration
}

func (c Conn) timeout() time.Duration {
	if c.RPCTimeout > 0 {
		return c.RPCTimeout
	}
	return DefaultRPCTimeout
}

// Query runs a query of the workflow id's latest run and decodes its answer.
func Query[T any](ctx context.Context, c Conn, id, queryType string, args ...any) (T, error) {
	var v T
	qctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	enc, err := c.Temporal.QueryWorkflow(qctx, id, "", queryType, args...)
	if err != nil {
		return v, err
	}
	if err := enc.Get(&v); err != nil {
		return v, fmt.Errorf("decoding %s of %s: %w", queryType, id, err)
	}
	return v, nil
}

// Describe is the server's record of the workflow id's latest run.
func Describe(ctx context.Context, c Conn, id string) (*workflowpb.WorkflowExecutionInfo, error) {
	dctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	d, err := c.Temporal.DescribeWorkflowExecution(dctx, id, "")
	if err != nil {
		return nil, fmt.Errorf("describing %s: %w", id, err)
	}
	return d.GetWorkflowExecutionInfo(), nil
}

// IsClosed says whether a run with this status has ended (continue-as-new is not an end:
// the id goes on in a new run).
func IsClosed(s enumspb.WorkflowExecutionStatus) bool {
	return s != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && s != enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW
}

// Memo decodes the memo field key of a run with dc (the client's converter: a memo is sealed
// when payloads are), if it has one.
func Memo[T any](dc converter.DataConverter, info *workflowpb.WorkflowExecutionInfo, key string) (T, bool) {
	var v T
	p, ok := info.GetMemo().GetFields()[key]
	if !ok {
		return v, false
	}
	if err := dc.FromPayload(p, &v); err != nil {
		return v, false
	}
	return v, true
}

// Result waits for the workflow id's latest run to close and decodes its result.
func Result[T any](ctx context.Context, c Conn, id string) (T, error) {
	var v T
	if err := c.Temporal.GetWorkflow(ctx, id, "").Get(ctx, &v); err != nil {
		return v, fmt.Errorf("%s: %w", id, err)
	}
	return v, nil
}

// Status asks the workflow for its status query. When no worker answers (a control plane too
// busy, none left for a closed run), it answers with the closed run's result, or else with
// the status the workflow last published under memoKey, with stale true. With neither, it is
// the query's error, never a zero status.
func Status[T any](ctx context.Context, c Conn, id, queryType, memoKey string) (st T, stale bool, err error) {
	st, err = Query[T](ctx, c, id, queryType)
	if err == nil {
		return st, false, nil
	}
	info, derr := Describe(ctx, c, id)
	if derr == nil && IsClosed(info.GetStatus()) {
		rctx, cancel := context.WithTimeout(ctx, c.timeout())
		defer cancel()
		if res, rerr := Result[T](rctx, c, id); rerr == nil {
			return res, false, nil
		}
	}
	if derr == nil {
		if pub, ok := Memo[T](ConverterOf(c.Temporal), info, memoKey); ok {
			return pub, true, nil
		}
	}
	return st, false, fmt.Errorf("querying %s of %s: %w", queryType, id, err)
}
