package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/workers/servingclient"
)

func newServeStatusCommand(g *globals) *cobra.Command {
	return newShowCommand(g, &cobra.Command{
		Use:   "status DEPLOYMENT-ID",
		Short: "Show a deployment's stages, failovers and cost",
		Args:  cobra.ExactArgs(1),
	}, "print the status as JSON", func(ctx context.Context, s *session, args []string) (serving.Status, error) {
		return servingclient.New(s.client).Status(ctx, args[0])
	}, printServingStatus)
}

// printServingStatus is the human view of a deployment.
func printServingStatus(out io.Writer, st serving.Status) error {
	pools := ""
	if st.PrefillReplicas > 0 {
		pools = fmt.Sprintf(" decode + %d × %d prefill", st.PrefillReplicas, st.Depth)
	}
	fmt.Fprintf(out, "deployment %s (%s)   phase %s   model %s   %d × %d stages%s\n", st.DeploymentID, st.Name,
		strings.ToUpper(st.Phase), st.Model, st.Replicas, st.Depth, pools)
	fmt.Fprintf(out, "cost %s so far, %s/h now (the same machines on demand: %s)   GPUs %d   zones %s\n",
		usd(st.CostUSD), usd(st.USDPerHour), usd(st.OnDemandCostUSD), st.GPUs, strings.Join(st.Zones, ","))
	fmt.Fprintf(out, "failovers %d   preemptions %d (notices %d)   machines lost otherwise %d\n",
		st.Failovers, st.Preemptions, st.Notices, st.LostInstances)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REPLICA\tSTAGE\tLAYERS\tSTATE\tINSTANCE\tZONE\tCAPACITY\tWORKER\tHOLDER")
	for _, s := range st.Stages {
		state := orDash(s.State)
		if !s.NoticedAt.IsZero() {
			// Still serving on a machine that is going: say so, and what replaces it.
			state += ", noticed " + s.NoticedAt.Local().Format(time.TimeOnly)
			if !s.ReclaimAt.IsZero() {
				state += ", reclaimed " + s.ReclaimAt.Local().Format(time.TimeOnly)
			}
			state += " → " + orDash(s.Standby)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d-%d\t%s\t%s\t%s\t%s\t%s\t%s\n", replicaName(s.Pool, s.Replica), s.Stage, s.Layers.First, s.Layers.End-1,
			state, orDash(s.InstanceID), orDash(s.Zone), orDash(string(s.Capacity)), orDash(s.WorkerAddr), orDash(s.HolderAddr))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range st.FailoverRecords {
		kind := "no notice"
		if f.Notice {
			kind = "notice"
		}
		fmt.Fprintf(out, "  failover %s replica %s stage %d (%s): %s → %s in %.1f s (down %.1f s)\n",
			f.At.Local().Format(time.TimeOnly), replicaName(f.Pool, f.Replica), f.Stage, kind, f.From, orDash(f.To), f.Seconds, f.DowntimeSeconds)
	}
	if st.Error != "" {
		fmt.Fprintln(out, "error: "+st.Error)
	}
	if st.Stale {
		fmt.Fprintf(out, "STALE: the deployment did not answer; this is what it last published, at %s\n", st.UpdatedAt.Format(time.TimeOnly))
	}
	return nil
}

// replicaName is a replica as the status lists it: its number, "prefill N" for a prefill
// replica (the pools number their replicas apart).
func replicaName(pool string, replica int) string {
	if pool == "" {
		return fmt.Sprint(replica)
	}
	return fmt.Sprintf("%s %d", pool, replica)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newServeListCommand(g *globals) *cobra.Command {
	var limit int
	cmd := newSessionCommand(g, &cobra.Command{
		Use:   "list",
		Short: "List serving deployments, newest first",
		Args:  cobra.NoArgs,
	}, func(ctx context.Context, cmd *cobra.Command, s *session, _ []string) error {
		deps, err := servingclient.New(s.client).List(ctx, "", limit)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "DEPLOYMENT\tSTATUS\tPHASE\tCOST\tGPUS\tZONES\tSTARTED")
		for _, d := range deps {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.ID, d.Status, d.Phase, usd(d.CostUSD), d.GPUs,
				strings.Join(d.Zones, ","), d.Started.Local().Format(time.DateTime))
		}
		return tw.Flush()
	})
	cmd.Flags().IntVar(&limit, "limit", 50, "most deployments to list")
	return cmd
}

func newServeStopCommand(g *globals) *cobra.Command {
	var reason string
	cmd := newSessionCommand(g, &cobra.Command{
		Use:   "stop DEPLOYMENT-ID",
		Short: "Drain a deployment, release every machine and end it",
		Args:  cobra.ExactArgs(1),
	}, func(ctx context.Context, cmd *cobra.Command, s *session, args []string) error {
		st, err := servingclient.New(s.client).Stop(ctx, args[0], reason)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "deployment %s %s; machines held: %d; cost %s\n", args[0], st.Phase, len(st.Instances), usd(st.CostUSD))
		return nil
	})
	cmd.Flags().StringVar(&reason, "reason", "stopped with schooner serve stop", "recorded with the deployment")
	return cmd
}
