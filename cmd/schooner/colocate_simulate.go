package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/colocation"
	"github.com/schooner-ml/schooner/gpu/colocate/simgpu"
)

// newColocateSimulateCommand is `schooner colocate simulate`: the runtime's admission rule and
// supervisor on the simulated GPU, against free streams and priority streams.
func newColocateSimulateCommand() *cobra.Command {
	var kernels []time.Duration
	var duration time.Duration
	var seed uint64
	p := colocation.DefaultParams()
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Compare the colocation runtime with streams and priority streams on a SIMULATED H200",
		Long: `simulate runs the pair of the H200 probe (HP requests of 16 memory-bound GEMMs, Poisson
arrivals; a BE loop of persistent compute-bound GEMMs) on gpu/colocate/simgpu's simulated GPU
under each mechanism, once per BE kernel length, and prints HP p50/p99 against dedicated and
the BE side's progress against alone. The runtime's rule is the C the launch shim runs; the GPU
is a model (blocks on SMs, priority never preempting a running block), not a measurement:
measured numbers come from 'schooner colocate run' on a GPU (BENCHMARKS.md).

  schooner colocate simulate --be-kernel 1.6ms --be-kernel 100us --target 1.05`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for i, k := range kernels {
				sc := simgpu.H200Probe(k)
				sc.Duration, sc.Seed, sc.Params = duration, seed, p
				rows, err := simgpu.Compare(sc)
				if err != nil {
					return err
				}
				if i > 0 {
					fmt.Fprintln(cmd.OutOrStdout())
				}
				if err := simgpu.WriteTable(cmd.OutOrStdout(), sc, rows); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationSliceVar(&kernels, "be-kernel", []time.Duration{1600 * time.Microsecond, 400 * time.Microsecond, 100 * time.Microsecond}, "BE GEMM kernel length (repeat): 1.6ms is an 8192³ bf16 GEMM on the H200, shorter ones what splitting makes of it")
	f.DurationVar(&duration, "duration", time.Second, "simulated time per run")
	f.Uint64Var(&seed, "seed", 1, "the arrivals' and block times' random seed")
	f.Float64Var(&p.TargetSlowdown, "target", p.TargetSlowdown, "the HP side's tolerated slowdown")
	f.DurationVar(&p.Budget, "budget", p.Budget, "starting cap on queued BE work")
	f.Float64Var(&p.SMShare, "sm-share", p.SMShare, "fraction of the SMs complementary BE kernels may hold beside running HP work")
	return cmd
}
