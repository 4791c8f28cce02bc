package main

import "github.com/spf13/cobra"

func newPolicyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Compare spot policies on spot-availability traces (fast simulator, no cloud)",
		Long: `policy replays spot-availability traces (SkyPilot's spot-traces format) against the spot
policies a training job can run under — schooner's deadline-aware policy, SkyPilot's FAILOVER
and EAGER_NEXT_REGION, Can't Be Late's uniform progress, all-spot and all-on-demand — with the
planner's throughput model and per-second billing. It is a simulation: nothing is launched.

  schooner policy eval
  schooner policy eval --trace ~/spot-traces/availability/16-node/aws-08-27-2023 --spec job.yaml
  schooner policy explain --iterations 600 --deadline 1.2x --start 53h45m   # one run, step by step`,
	}
	cmd.AddCommand(newPolicyEvalCommand(), newPolicyExplainCommand())
	return cmd
}
