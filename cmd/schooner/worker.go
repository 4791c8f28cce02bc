package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/gpu/nvml"
	"github.com/schooner-ml/schooner/workers"
)

func newWorkerCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run schooner workers against any Temporal cluster",
		Long: `worker runs one kind of schooner worker against a Temporal cluster: the embedded
'schooner dev' server, a self-hosted cluster (mTLS flags) or Temporal Cloud (--api-key).
Run as many control workers as you like; run one node agent on every GPU machine.`,
	}
	cmd.AddCommand(newControlWorkerCommand(g), newNodeWorkerCommand(g))
	return cmd
}

func newControlWorkerCommand(g *globals) *cobra.Command {
	var ensureSA bool
	var jobs controlJobFlags
	cmd := newWorkerSubcommand(g, &cobra.Command{
		Use:   "control",
		Short: "Run the control worker (queue schooner-control): workflows, cloud and planner activities",
		Long: `control runs the workflows and, with --cloud, the activities that plan jobs and buy, watch
and release their machines on that cloud. Run as many as you like against one cluster:

  schooner worker control --address temporal.internal:7233 --cloud aws --aws-region us-east-1
  schooner worker control --cloud sim          # beside a running 'schooner dev'`,
	}, func(ctx context.Context, s *session) error {
		if ensureSA {
			if err := workers.EnsureSearchAttributes(ctx, s.client, s.cfg.Namespace); err != nil {
				return err
			}
		}
		opts, note, err := jobs.options(ctx, s.log)
		if err != nil {
			return err
		}
		if note != "" {
			s.log.Info().Msg(note)
		}
		w := workers.NewControlWorkerWith(s.client, opts)
		if err := w.Start(); err != nil {
			return fmt.Errorf("starting control worker: %w", err)
		}
		defer w.Stop()
		s.log.Info().Str("address", s.cfg.Address).Str("namespace", s.cfg.Namespace).Str("metrics", s.metricsAddr).Msg("control worker running")
		<-ctx.Done()
		return nil
	})
	cmd.Flags().BoolVar(&ensureSA, "ensure-search-attributes", true, "register schooner's search attributes at start (needs operator rights)")
	addControlJobFlags(cmd.Flags(), &jobs)
	return cmd
}

func newNodeWorkerCommand(g *globals) *cobra.Command {
	var nodeID string
	var deregister bool
	cmd := newWorkerSubcommand(g, &cobra.Command{
		Use:   "node",
		Short: "Run this machine's node agent (queue schooner-node-<id>): GPU inventory and on-machine activities",
	}, func(ctx context.Context, s *session) error {
		agent := &workers.NodeAgent{ID: nodeID, Hostname: hostname(), GPUs: nvml.Real{}, Client: s.client, Logger: s.log}
		if inv := nvml.Discover(nvml.Real{}, nodeID, hostname(), time.Now().UTC()); len(inv.GPUs) > 0 {
			x := pythonInterferenceExecutor(os.Stderr)
			agent.Interference = x
			defer x.Close()
			agent.Colocation = newColocationRunner(os.Stderr)
		}
		if err := agent.Start(ctx); err != nil {
			return err
		}
		s.log.Info().Str("node", nodeID).Str("address", s.cfg.Address).Str("metrics", s.metricsAddr).Msg("node agent running")
		<-ctx.Done()
		agent.Stop(deregister)
		return nil
	})
	cmd.Flags().StringVar(&nodeID, "node-id", defaultNodeID(), "id of this node (its task queue is schooner-node-<id>)")
	cmd.Flags().BoolVar(&deregister, "deregister-on-exit", false, "remove this node from the registry when stopped (for machines that will not return)")
	return cmd
}
