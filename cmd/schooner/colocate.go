package main

import "github.com/spf13/cobra"

// newColocateCommand is `schooner colocate`: a best-effort program beside a latency-critical
// one on one GPU, under the Orion-style launch shim (docs/colocation.md).
func newColocateCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "colocate",
		Short: "Run a best-effort GPU program beside a latency-critical one, kernels gated so the latter keeps its latency",
		Long: `colocate runs two unmodified GPU programs on one GPU: a latency-critical one (HP, e.g. an
inference server) and a best-effort one (BE, e.g. a training job). A launch shim preloaded into
both sees every kernel launch (runtime, driver, cuBLASLt, Triton, CUDA graphs); the BE side's
kernels go only when the HP side is idle, or when they complement its running kernels within an
SM limit, and never with more queued BE work than a budget that adapts to the HP side's
measured slowdown. When the target is missed at the smallest budget, the BE side is paused,
then evicted.

  schooner colocate run --hp 'python3 serve.py' --be 'python3 train.py' --target 1.10
  schooner colocate run --node i-0abc --study i-0abc.json --kinds decode-chain+train-step --hp … --be …
  schooner colocate status schooner-colocate-…
  schooner colocate simulate          # the policy on a simulated H200, against streams and priority`,
	}
	cmd.AddCommand(newColocateRunCommand(g), newColocateStatusCommand(g), newColocateSimulateCommand())
	return cmd
}
