package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/gpu/nvml"
	"github.com/schooner-ml/schooner/nodes"
)

func newGPUCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gpu",
		Short: "Inspect this machine's GPUs directly, without Temporal",
	}
	var asJSON bool
	inv := &cobra.Command{
		Use:   "inventory",
		Short: "Print what the node agent's NVML discovery sees on this machine",
		Long: `inventory runs the same NVML discovery as the node agent's Inventory activity, locally,
and prints it: GPUs, memory, driver, and a telemetry sample (utilisation, SM clock, power).
Compare it with 'nvidia-smi' on a GPU machine.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			id := defaultNodeID()
			inv := nvml.Discover(nvml.Real{}, id, hostname(), time.Now().UTC())
			if asJSON {
				return printJSON(cmd.OutOrStdout(), inv)
			}
			printNodes(cmd.OutOrStdout(), nodes.InventoryResult{Nodes: []nodes.Report{{NodeID: id, Inventory: inv}}})
			if len(inv.GPUs) > 0 {
				fmt.Fprintln(cmd.OutOrStdout())
				printDevices(cmd.OutOrStdout(), inv.GPUs)
			}
			return nil
		},
	}
	inv.Flags().BoolVar(&asJSON, "json", false, "print the inventory as JSON")
	cmd.AddCommand(inv, newGPUInterferenceCommand(g))
	return cmd
}
