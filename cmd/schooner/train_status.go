package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/training"
)

func newTrainStatusCommand(g *globals) *cobra.Command {
	return newShowCommand(g, &cobra.Command{
		Use:   "status JOB-ID",
		Short: "Query a job's status (the workflow's status query)",
		Long: `status asks the job's workflow for its status. The same with the temporal CLI:
  temporal workflow query --workflow-id JOB-ID --type status`,
		Args: cobra.ExactArgs(1),
	}, "print the whole status as JSON", func(ctx context.Context, s *session, args []string) (training.JobStatus, error) {
		return s.jobs.Status(ctx, args[0])
	}, printStatus)
}

// printStatus prints the compact form: the live view's lines and the plan history.
func printStatus(out io.Writer, st training.JobStatus) error {
	fmt.Fprintln(out, strings.Join(renderView(st), "\n"))
	if len(st.Plans) > 1 {
		fmt.Fprintln(out, "plan history:")
		for _, p := range st.Plans {
			fmt.Fprintf(out, "  epoch %-3d %-11s from step %-6d %s\n", p.Epoch, p.Reason, p.FromStep, p.Summary)
		}
	}
	return nil
}
