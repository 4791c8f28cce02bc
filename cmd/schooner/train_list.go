package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers"
)

func newTrainListCommand(g *globals) *cobra.Command {
	var cfg workers.ClientConfig
	var query string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List training jobs with their phase, progress, cost, GPUs and zones",
		Long: `list runs a visibility query over TrainingJob workflows and shows schooner's search
attributes. The same with the temporal CLI:
  temporal workflow list --query "WorkflowType='TrainingJob' AND SchoonerPhase='training'"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withTrainClient(cmd, g, cfg, func(ctx context.Context, tc *trainClient) error {
				q := "WorkflowType='" + training.WorkflowTrainingJob + "'"
				if query != "" {
					q += " AND (" + query + ")"
				}
				return listJobs(ctx, tc.c, q, limit, cmd.OutOrStdout())
			})
		},
	}
	addClientFlags(cmd.Flags(), &cfg)
	cmd.Flags().StringVar(&query, "query", "", "extra visibility filter, e.g. \"SchoonerPhase='training'\"")
	cmd.Flags().IntVar(&limit, "limit", 50, "show at most this many jobs")
	return cmd
}

func listJobs(ctx context.Context, c client.Client, query string, limit int, out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSTATUS\tPHASE\tPROGRESS\tCOST\tGPUS\tZONES\tSTARTED")
	var token []byte
	n := 0
	for n < limit {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token, PageSize: int32(min(limit, 100))})
		if err != nil {
			return fmt.Errorf("listing training jobs: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			if n >= limit {
				break
			}
			n++
			sa := e.GetSearchAttributes().GetIndexedFields()
			var phase string
			var cost, progress float64
			var gpus int64
			var zones []string
			decodeAttr(sa, "SchoonerPhase", &phase)
			decodeAttr(sa, "SchoonerCostUSD", &cost)
			decodeAttr(sa, "SchoonerProgress", &progress)
			decodeAttr(sa, "SchoonerGPUs", &gpus)
			decodeAttr(sa, "SchoonerZones", &zones)
			status := strings.ToLower(strings.TrimPrefix(e.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f%%\t$%.2f\t%d\t%s\t%s\n", e.GetExecution().GetWorkflowId(), status, phase,
				progressPct(progress), cost, gpus, strings.Join(zones, ","), e.GetStartTime().AsTime().Local().Format(time.DateTime))
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n == 0 {
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

// decodeAttr reads one search attribute; a missing or malformed one leaves v at its zero
// value, since a job that has not upserted it yet is still worth listing.
func decodeAttr(fields map[string]*commonpb.Payload, name string, v any) {
	if p, ok := fields[name]; ok {
		_ = converter.GetDefaultDataConverter().FromPayload(p, v)
	}
}
