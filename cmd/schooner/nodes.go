package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/nodes"
	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/workflows/nodeswf"
)

func newNodesCommand(g *globals) *cobra.Command {
	var asJSON bool
	var wait time.Duration
	cmd := newSessionCommand(g, &cobra.Command{
		Use:   "nodes",
		Short: "Ask every node agent for its GPUs (runs the NodeInventory workflow)",
		Long: `nodes starts the NodeInventory workflow, which asks every registered node agent for
its GPU inventory on the agent's own task queue, and prints one row per node. A node whose
agent does not answer within --wait is shown as unreachable. The same workflow can be started
with the temporal CLI:
  temporal workflow execute --type NodeInventory --task-queue schooner-control --input '{}'`,
		Args: cobra.NoArgs,
	}, func(ctx context.Context, cmd *cobra.Command, s *session, _ []string) error {
		run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID:                 fmt.Sprintf("schooner-nodes-%d", time.Now().UnixNano()),
			TaskQueue:          taskqueue.Control,
			WorkflowRunTimeout: wait + time.Minute,
			StaticSummary:      "GPU inventory of every node (schooner nodes)",
		}, nodeswf.NodeInventory, nodes.InventoryRequest{Wait: wait})
		if err != nil {
			return fmt.Errorf("starting NodeInventory: %w", err)
		}
		var res nodes.InventoryResult
		if err := run.Get(ctx, &res); err != nil {
			return fmt.Errorf("NodeInventory %s: %w", run.GetID(), err)
		}
		if asJSON {
			return printJSON(cmd.OutOrStdout(), res)
		}
		printNodes(cmd.OutOrStdout(), res)
		return nil
	})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the full inventory as JSON")
	cmd.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long a node agent may take to answer before it is reported unreachable")
	return cmd
}

func printNodes(out io.Writer, res nodes.InventoryResult) {
	printTable(out, "no node agents registered: start one with 'schooner dev' or 'schooner worker node'",
		"NODE\tHOST\tGPUS\tMODEL\tMEMORY\tDRIVER\tNOTE", res.Nodes, func(tw io.Writer, n nodes.Report) {
			inv := n.Inventory
			if n.Error != "" {
				fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t%s\n", n.NodeID, n.Error)
				return
			}
			mem := "-"
			if total := inv.TotalMemoryMiB(); total > 0 {
				mem = fmt.Sprintf("%.1f GiB", float64(total)/1024)
			}
			driver := inv.DriverVersion
			if driver == "" {
				driver = "-"
			} else if inv.CUDAVersion != "" {
				driver += " (CUDA " + inv.CUDAVersion + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", n.NodeID, inv.Hostname, len(inv.GPUs), inv.Model(), mem, driver, inv.Reason)
		})
}

func printDevices(out io.Writer, devs []gpu.Device) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INDEX\tNAME\tMEMORY USED/TOTAL (MiB)\tUTIL\tSM CLOCK\tPOWER\tMIG\tUUID")
	for _, d := range devs {
		fmt.Fprintf(tw, "%d\t%s\t%d/%d\t%d%%\t%d MHz\t%.0f W\t%v\t%s\n",
			d.Index, d.Name, d.MemoryUsedMiB, d.MemoryTotalMiB, d.UtilizationPct, d.SMClockMHz, d.PowerW, d.MIGEnabled, d.UUID)
	}
	_ = tw.Flush()
}
