package main

import "github.com/spf13/cobra"

func newPlanCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Plan training on heterogeneous, geo-distributed GPUs (Sailor-style search and simulator)",
		Long: `plan decides how to train a model on whatever GPUs can be had — pipeline stages, data
parallelism, tensor parallelism and GPU type per stage, zones, microbatch size — and predicts
iteration time, cost and peak memory for any plan.

  schooner plan search --model OPT-350M --global-batch 256 --cloud sim
  schooner plan simulate --plan plan.json

serve plans LLM serving instead: the cheapest configuration that meets latency targets.

  schooner plan serve --model llama-3-8b --rate 5 --prompt 512 --output 256 --spot`,
	}
	cmd.AddCommand(newPlanSearchCommand(g), newPlanSimulateCommand(g), newPlanServeCommand(g))
	return cmd
}
