package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/activities/trainingact"
	"github.com/schooner-ml/schooner/gpu/nvml"
	"github.com/schooner-ml/schooner/trainer/node"
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
		stopRelay, err := jobs.relayEvents(ctx, s.client, s.log)
		if err != nil {
			return err
		}
		defer stopRelay()
		stopGCE, err := jobs.relayGCEPreemptions(ctx, s.client, s.log)
		if err != nil {
			return err
		}
		defer stopGCE()
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
	// A bad --cloud or endpoint is refused before anything connects.
	cmd.PreRunE = func(*cobra.Command, []string) error { return jobs.check() }
	return cmd
}

func newNodeWorkerCommand(g *globals) *cobra.Command {
	var nodeID, dataDir string
	var deregister bool
	var allowed, storeRoots []string
	var notices noticeFlags
	cmd := newWorkerSubcommand(g, &cobra.Command{
		Use:   "node",
		Short: "Run this machine's node agent (queue schooner-node-<id>): GPU inventory and on-machine activities",
		Long: `node runs this machine's agent: its GPU inventory, interference studies, colocated pairs, and
the trainers of the training jobs placed on it (each with its own checkpoint agent). Its id must
be the cloud's instance id, which is what jobs address: schooner-node-<instance id>.
Command trainers run only with --allow-command; the simulated trainer always may.

With --watch aws (or --imds-endpoint) or --watch gce (or --gce-metadata) it polls the machine's
metadata for a preemption notice every second: the trainers running here take an emergency
checkpoint and their jobs are told at once. Without it a job hears of the preemption only from
the control plane and restores from its last periodic checkpoint.`,
	}, func(ctx context.Context, s *session) error {
		watcher, err := notices.watcher()
		if err != nil {
			return err
		}
		sup := &node.Supervisor{NodeID: nodeID, DataDir: dataDir,
			Reporter: workers.NewReporter(s.client), StoreRoots: storeRoots, AllowedCommands: allowed,
			Logger: s.log.With().Str("component", "trainers").Logger()}
		agent := &workers.NodeAgent{ID: nodeID, Hostname: hostname(), GPUs: nvml.Real{}, Client: s.client, Logger: s.log,
			Trainer: &trainingact.Trainer{Supervisor: sup}}
		if inv := nvml.Discover(nvml.Real{}, nodeID, hostname(), time.Now().UTC()); len(inv.GPUs) > 0 {
			x := pythonInterferenceExecutor(os.Stderr)
			agent.Interference = x
			defer x.Close()
			agent.Colocation = newColocationRunner(os.Stderr)
		}
		if err := agent.Start(ctx); err != nil {
			return err
		}
		if watcher != nil {
			w := &workers.NoticeWatch{NodeID: nodeID, Watcher: watcher, Trainers: sup, Reporter: workers.NewReporter(s.client),
				Logger: s.log.With().Str("component", "notices").Logger()}
			go func() { _ = w.Run(ctx) }()
		}
		s.log.Info().Str("node", nodeID).Str("address", s.cfg.Address).Str("metrics", s.metricsAddr).Msg("node agent running")
		<-ctx.Done()
		agent.Stop(deregister)
		return nil
	})
	cmd.Flags().StringVar(&nodeID, "node-id", defaultNodeID(), "id of this node (its task queue is schooner-node-<id>)")
	cmd.Flags().BoolVar(&deregister, "deregister-on-exit", false, "remove this node from the registry when stopped (for machines that will not return)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "where the trainers' checkpoint agents keep their local tier (default: a directory under the OS temp dir)")
	cmd.Flags().StringArrayVar(&allowed, "allow-command", nil, "a command prefix jobs' command trainers may run here (repeatable; words may be globs); none: command trainers are refused")
	notices.add(cmd.Flags())
	// A bad --watch is refused before anything connects.
	cmd.PreRunE = func(*cobra.Command, []string) error { _, err := notices.watcher(); return err }
	cmd.Flags().StringSliceVar(&storeRoots, "store-root", nil, "a directory file:// checkpoint stores may be in (repeatable; default the data directory, /var/lib/schooner and the OS temp dir)")
	return cmd
}
