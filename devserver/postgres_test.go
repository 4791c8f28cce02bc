package devserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/devserver/pgtest"
)

// greet is the workflow the PostgreSQL test runs: one activity, so the run goes through
// history, matching and timer tasks in the database.
func greet(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out string
	err := workflow.ExecuteActivity(ctx, "Upper", name).Get(ctx, &out)
	return "hello " + out, err
}

// The embedded server runs on PostgreSQL: a workflow completes, shows up in the visibility
// store, and is still there, with its result, after the server restarts on the same database.
func TestPostgresKeepsWorkflowsAcrossRestarts(t *testing.T) {
	pg := pgtest.Start(t)
	port, err := FreePort("127.0.0.1")
	require.NoError(t, err)
	opts := Options{Port: port, Headless: true, Database: pg.URL("dev"), ServerLogLevel: "error",
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)}
	began := time.Now()
	srv, err := Start(opts)
	require.NoError(t, err)
	t.Logf("first start (databases and schemas created): %s", time.Since(began).Round(time.Millisecond))
	defer func() { srv.Stop() }()
	assert.NotContains(t, srv.Storage(), pgtest.Password)
	assert.Contains(t, srv.Storage(), "dev_visibility")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.Dial(client.Options{HostPort: srv.Address(), Namespace: srv.Namespace()})
	require.NoError(t, err)
	defer c.Close()
	w := worker.New(c, "pg-test", worker.Options{})
	w.RegisterWorkflowWithOptions(greet, workflow.RegisterOptions{Name: "Greet"})
	w.RegisterActivityWithOptions(func(_ context.Context, s string) (string, error) { return strings.ToUpper(s), nil },
		activity.RegisterOptions{Name: "Upper"})
	require.NoError(t, w.Start())
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "pg-greet", TaskQueue: "pg-test"}, "Greet", "postgres")
	require.NoError(t, err)
	var got string
	require.NoError(t, run.Get(ctx, &got))
	require.Equal(t, "hello POSTGRES", got)
	w.Stop()

	// Visibility (the second database) is written asynchronously: poll with a deadline.
	listed := func(c client.Client) int {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: srv.Namespace(), Query: "WorkflowId='pg-greet' AND ExecutionStatus='Completed'"})
		if err != nil {
			return -1
		}
		return len(resp.Executions)
	}
	n := 0
	for deadline := time.Now().Add(10 * time.Second); n != 1 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		n = listed(c)
	}
	require.Equal(t, 1, n, "the completed workflow is listed by the visibility store")
	c.Close()

	srv.Stop()
	began = time.Now()
	srv, err = Start(opts)
	require.NoError(t, err)
	t.Logf("second start (schemas up to date): %s", time.Since(began).Round(time.Millisecond))
	c2, err := client.Dial(client.Options{HostPort: srv.Address(), Namespace: srv.Namespace()})
	require.NoError(t, err)
	defer c2.Close()
	desc, err := c2.DescribeWorkflowExecution(ctx, "pg-greet", "")
	require.NoError(t, err)
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.WorkflowExecutionInfo.Status)
	got = ""
	require.NoError(t, c2.GetWorkflow(ctx, "pg-greet", "").Get(ctx, &got))
	assert.Equal(t, "hello POSTGRES", got, "the result survived the restart")
	assert.Equal(t, 1, listed(c2), "and so did its visibility record")
}
