package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func newTrainCancelCommand(g *globals) *cobra.Command {
	var timeout time.Duration
	cmd := newSessionCommand(g, &cobra.Command{
		Use:   "cancel JOB-ID",
		Short: "Cancel a job and wait until it has released every instance",
		Long: `cancel asks the job to stop; the job releases every instance it holds (in a disconnected
context, so the release itself is not cancelled) and then ends. The same with the temporal CLI:
  temporal workflow cancel --workflow-id JOB-ID`,
		Args: cobra.ExactArgs(1),
	}, func(ctx context.Context, cmd *cobra.Command, s *session, args []string) error {
		st, err := s.jobs.Cancel(ctx, args[0], timeout)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "job %s %s; instances held: %d; cost %s\n", args[0], st.Phase, len(st.Instances), usd(st.CostUSD))
		return nil
	})
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait for the job to release its instances")
	return cmd
}
