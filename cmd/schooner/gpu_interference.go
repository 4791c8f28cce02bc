package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	gi "github.com/schooner-ml/schooner/gpu/interference"
	"github.com/schooner-ml/schooner/interference"
	"github.com/schooner-ml/schooner/internal/atomicfile"
)

// newGPUInterferenceCommand is `schooner gpu interference`: reading interference studies.
func newGPUInterferenceCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "interference",
		Short: "Read GPU interference studies: slowdowns of colocated jobs under each sharing mechanism",
		Long: `An interference study measures, on one GPU, how much a latency-critical workload (a decode
step chain, a prefill GEMM, a CNN inference request) slows beside a best-effort one (a large
GEMM, a memory-bound copy, a training step) under each way the GPU can be shared: CUDA streams
(equal or higher priority), MPS at several thread limits, green contexts of several SM counts,
time-slicing between processes, MIG. NVML's "utilisation" cannot tell whether two jobs fit on
one GPU (it reads ~100% for a single thread block); these slowdowns can.

The result format is versioned JSON, documented in docs/interference.md.`,
	}
	var svgPath string
	var asJSON bool
	show := &cobra.Command{
		Use:   "show STUDY.json",
		Short: "Print a study's table (slowdowns against each workload alone, the Pareto front) and draw its plot",
		Long: `show reads a study, prints for every pair and mechanism the latency-critical side's p50 and
p99 against it alone and the best-effort side's throughput against it alone, marks each pair's
Pareto front (no other mechanism gives the best-effort side as much throughput with a p99 at
most as slow) and lists the mechanisms the machine refused, with the reason. --svg also draws
the front, one panel per pair.

  schooner gpu interference show results/h200.json --svg h200.svg`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := interference.ReadFile(args[0])
			if err != nil {
				return err
			}
			rows, err := gi.Analyze(st)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rows)
			}
			if err := gi.WriteTable(cmd.OutOrStdout(), st, rows); err != nil {
				return err
			}
			if svgPath == "" {
				return nil
			}
			if err := atomicfile.Write(svgPath, func(w io.Writer) error { return gi.WriteSVG(w, st, rows) }); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "plot: %s\n", svgPath)
			return nil
		},
	}
	show.Flags().StringVar(&svgPath, "svg", "", "also draw the Pareto fronts as SVG to this file")
	show.Flags().BoolVar(&asJSON, "json", false, "print the analysed rows as JSON instead of the table")
	cmd.AddCommand(show, newGPUInterferenceRunCommand(g))
	return cmd
}
