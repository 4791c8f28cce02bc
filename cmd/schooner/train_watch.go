package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers"
)

func newTrainWatchCommand(g *globals) *cobra.Command {
	var cfg workers.ClientConfig
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "watch JOB-ID",
		Short: "Follow a job live until it ends (one line per change when not a terminal)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withTrainClient(cmd, g, cfg, func(ctx context.Context, tc *trainClient) error {
				st, err := watchJob(ctx, tc.c, args[0], cmd.OutOrStdout(), isTerminal(cmd.OutOrStdout()), every)
				if err != nil {
					return err
				}
				return jobOutcome(st)
			})
		},
	}
	addClientFlags(cmd.Flags(), &cfg)
	cmd.Flags().DurationVar(&every, "every", time.Second, "how often to refresh")
	return cmd
}

// watchJob shows a job's status every interval until the workflow closes, and returns its
// final status. A query that fails while the job runs (a worker restarting) is shown and
// retried, not fatal.
func watchJob(ctx context.Context, c client.Client, jobID string, out io.Writer, tty bool, every time.Duration) (training.JobStatus, error) {
	view := &liveView{out: out, tty: tty}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var last training.JobStatus
	for {
		closed, err := jobClosed(ctx, c, jobID)
		if err != nil {
			return last, err
		}
		st, qerr := queryStatus(ctx, c, jobID)
		if qerr == nil {
			last = st
			view.show(st)
		} else if !tty {
			fmt.Fprintf(out, "%s: %v (retrying)\n", jobID, qerr)
		}
		if closed {
			if qerr != nil {
				return last, qerr
			}
			return last, nil
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-tick.C:
		}
	}
}

// jobClosed says whether the job's workflow (the latest run of its id) has ended.
// Continue-as-new is not an end: the id goes on in a new run.
func jobClosed(ctx context.Context, c client.Client, jobID string) (bool, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d, err := c.DescribeWorkflowExecution(dctx, jobID, "")
	if err != nil {
		return false, fmt.Errorf("describing job %s: %w", jobID, err)
	}
	s := d.GetWorkflowExecutionInfo().GetStatus()
	return s != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && s != enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW, nil
}
