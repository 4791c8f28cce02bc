package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers/trainingclient"
)

func newTrainWatchCommand(g *globals) *cobra.Command {
	var every time.Duration
	cmd := newSessionCommand(g, &cobra.Command{
		Use:   "watch JOB-ID",
		Short: "Follow a job live until it ends (one line per change when not a terminal)",
		Args:  cobra.ExactArgs(1),
	}, func(ctx context.Context, cmd *cobra.Command, s *session, args []string) error {
		st, err := watchJob(ctx, s.jobs, args[0], cmd.OutOrStdout(), every)
		if err != nil {
			return err
		}
		return jobOutcome(st)
	})
	cmd.Flags().DurationVar(&every, "every", time.Second, "how often to refresh")
	return cmd
}

// watchJob shows a job's status on out every interval until the workflow closes, and
// returns its final status. A query that fails while the job runs (a worker restarting) is
// shown (when out is not a terminal) and retried, not fatal.
func watchJob(ctx context.Context, jobs *trainingclient.Client, jobID string, out io.Writer, every time.Duration) (training.JobStatus, error) {
	view := &liveView{out: out, tty: isTerminal(out)}
	return jobs.Watch(ctx, jobID, every, func(st training.JobStatus, err error) {
		switch {
		case err == nil:
			view.show(st)
		case !view.tty:
			fmt.Fprintf(out, "%s: %v (retrying)\n", jobID, err)
		}
	})
}
