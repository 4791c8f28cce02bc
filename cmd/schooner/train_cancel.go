package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers"
)

func newTrainCancelCommand(g *globals) *cobra.Command {
	var cfg workers.ClientConfig
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "cancel JOB-ID",
		Short: "Cancel a job and wait until it has released every instance",
		Long: `cancel asks the job to stop; the job releases every instance it holds (in a disconnected
context, so the release itself is not cancelled) and then ends. The same with the temporal CLI:
  temporal workflow cancel --workflow-id JOB-ID`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withTrainClient(cmd, g, cfg, func(ctx context.Context, tc *trainClient) error {
				st, err := cancelJob(ctx, tc.c, args[0], timeout)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "job %s %s; instances held: %d; cost $%.2f\n", args[0], st.Phase, len(st.Instances), st.CostUSD)
				return nil
			})
		},
	}
	addClientFlags(cmd.Flags(), &cfg)
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait for the job to release its instances")
	return cmd
}

// cancelJob requests cancellation and waits, up to timeout, until the workflow has closed:
// it closes only after its release step ran.
func cancelJob(ctx context.Context, c client.Client, jobID string, timeout time.Duration) (training.JobStatus, error) {
	if err := c.CancelWorkflow(ctx, jobID, ""); err != nil {
		return training.JobStatus{}, fmt.Errorf("cancelling job %s: %w", jobID, err)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		closed, err := jobClosed(wctx, c, jobID)
		if err == nil && closed {
			break
		}
		select {
		case <-wctx.Done():
			return training.JobStatus{}, fmt.Errorf("waiting for job %s to release its instances: %w", jobID, wctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	st, err := queryStatus(ctx, c, jobID)
	if err != nil {
		// A cancelled job's result is a cancellation error; the release still happened.
		return training.JobStatus{JobID: jobID, Phase: training.PhaseCancelled}, nil
	}
	return st, nil
}
