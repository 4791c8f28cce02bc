package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/workers/trainingclient"
)

func newTrainListCommand(g *globals) *cobra.Command {
	var opts trainingclient.ListOptions
	cmd := newSessionCommand(g, &cobra.Command{
		Use:   "list",
		Short: "List training jobs with their phase, progress, cost, GPUs and zones",
		Long: `list runs a visibility query over TrainingJob workflows and shows schooner's search
attributes. The same with the temporal CLI:
  temporal workflow list --query "WorkflowType='TrainingJob' AND SchoonerPhase='training'"`,
		Args: cobra.NoArgs,
	}, func(ctx context.Context, cmd *cobra.Command, s *session, _ []string) error {
		jobs, err := s.jobs.List(ctx, opts)
		if err != nil {
			return err
		}
		return printJobs(cmd.OutOrStdout(), jobs)
	})
	cmd.Flags().StringVar(&opts.Query, "query", "", "extra visibility filter, e.g. \"SchoonerPhase='training'\"")
	cmd.Flags().IntVar(&opts.Limit, "limit", 50, "show at most this many jobs")
	return cmd
}

// printJobs is the table of `schooner train list`.
func printJobs(out io.Writer, jobs []trainingclient.JobSummary) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSTATUS\tPHASE\tPROGRESS\tCOST\tGPUS\tZONES\tSTARTED")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f%%\t%s\t%d\t%s\t%s\n", j.ID, j.Status, j.Phase,
			progressPct(j.Progress), usd(j.CostUSD), j.GPUs, strings.Join(j.Zones, ","), j.Started.Local().Format(time.DateTime))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(jobs) == 0 {
		fmt.Fprintln(out, "no training jobs")
	}
	return nil
}

// progressPct reads SchoonerProgress, a fraction (0..1), as a percentage; a value above 1
// is taken as a percentage already.
func progressPct(p float64) float64 {
	if p <= 1 {
		return 100 * p
	}
	return p
}
