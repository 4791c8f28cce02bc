package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/workers"
	"github.com/schooner-ml/schooner/workers/servingclient"
)

func newServeDeployCommand(g *globals) *cobra.Command {
	var cfg workers.ClientConfig
	var id, routerAddr string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "deploy SPEC",
		Short: "Validate a deployment spec (YAML or JSON) and start it as a ServingDeployment workflow",
		Long: `deploy reads a deployment spec (examples/serve-*.yaml), applies the defaults, validates it
(every problem is printed, nothing is started if there is one) and starts a ServingDeployment
workflow on schooner-control with id serve-<name>-<6 random characters>. The workflow checks
the spec again, so the plain temporal CLI gets the same answers.

With --router ADDR it then serves the OpenAI-compatible API on ADDR for this deployment until
Ctrl-C (as 'schooner serve router' does); the deployment keeps running after that.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := loadServingSpec(args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if dryRun {
				fmt.Fprintf(cmd.OutOrStdout(), "%s is valid\n", args[0])
				return nil
			}
			return withSession(cmd, g, cfg, "", func(ctx context.Context, s *session) error {
				sc := servingclient.New(s.client)
				depID, err := sc.Deploy(ctx, spec, servingclient.DeployOptions{ID: id})
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "started serving deployment %s\n\n", depID)
				fmt.Fprintf(out, "  status:  schooner serve status %s --address %s\n", depID, s.cfg.Address)
				fmt.Fprintf(out, "  router:  schooner serve router %s --listen 127.0.0.1:8000\n", depID)
				fmt.Fprintf(out, "  stop:    %s\n\n", s.temporalCLI("workflow update execute --workflow-id "+depID+" --name stop"))
				if routerAddr == "" {
					return nil
				}
				return runRouter(ctx, s, sc, depID, spec, routerAddr, nil, out)
			})
		},
	}
	addClientFlags(cmd.Flags(), &cfg)
	cmd.Flags().StringVar(&id, "id", "", "deployment id (default serve-<name>-<random>)")
	cmd.Flags().StringVar(&routerAddr, "router", "", "after starting, serve the OpenAI-compatible API on this host:port")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate the spec and start nothing")
	return cmd
}

// loadServingSpec reads, defaults and validates a deployment spec file, printing every problem.
func loadServingSpec(path string, errOut io.Writer) (serving.Spec, error) {
	return loadSpecFile(path, "serving", serving.ParseSpec, errOut)
}
