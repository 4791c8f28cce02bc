package main

import (
	"github.com/spf13/cobra"
)

func newServeCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Deploy, watch and stop LLM serving deployments (ServingDeployment workflows)",
		Long: `serve drives LLM serving deployments. A deployment is a ServingDeployment workflow on the
schooner-control queue whose id is the deployment id: it acquires a machine per pipeline
stage, runs the inference workers on them, replicates every stage's KV cache to the next
stage's node, and replaces a lost stage without recomputing in-flight requests. With
prefill_replicas in the spec, prefill replicas compute the prompts and stream their KV caches
to the decode replicas (prompt–token disaggregation). OpenAI-compatible clients talk to a
router that follows the deployment.

  schooner serve deploy examples/serve-tiny.yaml --router 127.0.0.1:8000
  schooner serve router <deployment-id> --listen 127.0.0.1:8000
  schooner serve status <deployment-id> [--json]
  schooner serve list
  schooner serve scale <deployment-id> --replicas 2 [--prefill-replicas 1]
  schooner serve stop <deployment-id>`,
	}
	cmd.AddCommand(newServeDeployCommand(g), newServeRouterCommand(g), newServeStatusCommand(g),
		newServeListCommand(g), newServeScaleCommand(g), newServeStopCommand(g))
	return cmd
}
