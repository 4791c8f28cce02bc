//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/devserver/stack"
	"github.com/schooner-ml/schooner/gpu/nvml"
	"github.com/schooner-ml/schooner/workers"
)

type devFlags struct {
	stack       stack.Options
	nodeID      string
	metricsAddr string
	pprofAddr   string
	simEC2Addr  string
	simGCEAddr  string
	// interruptions is where the control side learns of preemptions: log or sqs.
	interruptions string
	// only runs one part of the stack (devOnlyServer, devOnlyMarket); empty runs it all.
	only string
}

func newDevCommand(g *globals) *cobra.Command {
	f := &devFlags{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a Temporal server, the Temporal UI, the control worker and a node agent in one process",
		Long: `dev runs everything schooner needs on one machine: a real Temporal server persisted in
SQLite under --data-dir (workflows survive a restart), or with --db postgres://… in PostgreSQL
(databases and Temporal's schema created or updated at start), the Temporal UI, schooner's search
attributes, the control worker (with the training activities, on the simulated spot market),
a node agent for this machine and one node agent per simulated instance, so training jobs run:
  schooner train submit examples/demo.yaml --time-scale <same as --time-scale> --watch

Point the temporal CLI at it with the flags it prints, e.g.
  temporal --address 127.0.0.1:7233 --namespace default workflow list

Ctrl-C stops everything within 10 seconds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withLogger(cmd, g, func(ctx context.Context, log zerolog.Logger) error {
				return runDev(ctx, f, log, cmd.OutOrStdout())
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.stack.DataDir, "data-dir", ".schooner", "directory for the Temporal SQLite database and schooner's local state")
	fs.StringVar(&f.stack.Database, "db", "",
		"Temporal's database: sqlite (in --data-dir, the default) or postgres://user:password@host:port/dbname?sslmode=disable, whose dbname (default temporal) and dbname_visibility are created if missing and their schemas set up or updated; when not given, env SCHOONER_DB (which keeps the password off the command line)")
	addServerFlags(fs, &f.stack, 7233, "Temporal gRPC port", "Temporal UI port")
	fs.StringVar(&f.stack.Namespace, "namespace", "default", "Temporal namespace to create and use")
	fs.StringVar(&f.nodeID, "node-id", defaultNodeID(), "id of this machine's node agent (task queue schooner-node-<id>)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "127.0.0.1:9464", "serve worker metrics for Prometheus here (empty to disable)")
	fs.StringVar(&f.pprofAddr, "pprof-addr", "", "serve Go profiles for `go tool pprof` here, e.g. 127.0.0.1:6060 (loopback only; empty to disable)")
	fs.StringVar(&f.stack.ServerLogLevel, "server-log-level", "warn", "log level of the embedded Temporal server")
	fs.Float64Var(&f.stack.TimeScale, "time-scale", 1, "simulated seconds per wall second in the simulated spot market")
	fs.Int64Var(&f.stack.Seed, "sim-seed", 1, "seed of the simulated spot market (same seed, same market)")
	addTraceFlag(fs, &f.stack)
	fs.StringVar(&f.simEC2Addr, "sim-ec2-addr", defaultSimEC2Addr, "where to serve the simulated EC2 API and instance metadata")
	fs.StringVar(&f.simGCEAddr, "sim-gce-addr", defaultSimGCEAddr, "where to serve the simulated Compute Engine API and metadata server")
	fs.StringVar(&f.interruptions, "interruptions", interruptionsLog,
		"how the control side hears of preemptions: log (the market's event log) or sqs (EventBridge-shaped events through the simulated EC2 face's SQS queue, read with the real SDK)")
	fs.StringVar(&f.only, "only", "",
		"run one part only, for a cluster of separate processes: server (the Temporal server) or market (the simulated market and its EC2 and Compute faces); workers then come from 'schooner worker control --cloud sim' and 'schooner worker node'")
	return cmd
}

func runDev(ctx context.Context, f *devFlags, log zerolog.Logger, out io.Writer) error {
	began := time.Now()
	if err := positiveTimeScale(f.stack.TimeScale); err != nil {
		return err
	}
	if err := checkTraceDir(f.stack, out); err != nil {
		return err
	}
	if err := checkInterruptions(f.interruptions); err != nil {
		return err
	}
	if f.only != "" {
		return runDevPart(ctx, f, log, out)
	}
	metrics, metricsAddr, err := serveMetrics(ctx, f.metricsAddr)
	if err != nil {
		return err
	}
	pprofAddr, err := servePprof(ctx, f.pprofAddr)
	if err != nil {
		return err
	}
	o := f.stack
	if o.Database == "" {
		// Read here, not as the flag's default, which --help would print, password and all.
		o.Database = os.Getenv("SCHOONER_DB")
	}
	o.Logger, o.SDKLogger, o.Metrics = log, sdkLogger(log), metrics
	s, err := stack.Start(ctx, o)
	if err != nil {
		return err
	}
	defer stopWithin(s, 10*time.Second, log)
	apis, err := serveSimAPIs(s.Market, f.simEC2Addr, f.simGCEAddr)
	if err != nil {
		return err
	}
	s.Defer(apis.Close)
	if f.interruptions == interruptionsSQS {
		if err := relayFromSQS(ctx, s, apis, workers.NewReporter(s.Client), log); err != nil {
			return err
		}
	}
	node := &workers.NodeAgent{ID: f.nodeID, Hostname: hostname(), GPUs: nvml.Real{}, Client: s.Client, Logger: log}
	if err := node.Start(ctx); err != nil {
		return err
	}
	s.Defer(func() { node.Stop(false) })
	printDevBanner(out, s, f, metricsAddr, apis, time.Since(began))
	if pprofAddr != "" {
		fmt.Fprintf(out, "Profiles:         go tool pprof http://%s/debug/pprof/heap   (or /profile, /goroutine)\n", pprofAddr)
	}
	<-ctx.Done()
	log.Info().Msg("stopping: node agent, workers, UI, Temporal server")
	return nil
}

func printDevBanner(out io.Writer, s *stack.Stack, f *devFlags, metricsAddr string, sc *simAPIs, took time.Duration) {
	srv := s.Server
	fmt.Fprintf(out, "\nschooner dev is ready (%.1fs)\n", took.Seconds())
	fmt.Fprintf(out, "  Temporal gRPC   %s   namespace %s\n", srv.Address(), srv.Namespace())
	if ui := srv.UIAddress(); ui != "" {
		fmt.Fprintf(out, "  Temporal UI     http://%s/namespaces/%s/workflows\n", ui, srv.Namespace())
	}
	if metricsAddr != "" {
		fmt.Fprintf(out, "  Metrics         http://%s/metrics\n", metricsAddr)
	}
	fmt.Fprintf(out, "  Data            %s\n", srv.Storage())
	fmt.Fprintf(out, "  Node agent      %s (queue schooner-node-%s)\n", f.nodeID, f.nodeID)
	fmt.Fprintf(out, "  Simulated cloud seed %d, %gx wall time, starts %s (simulated)\n", f.stack.Seed, f.stack.TimeScale, s.Market.Now().Format(time.RFC3339))
	fmt.Fprintf(out, "    EC2 API       %s   (instance metadata: %s<instance-id>/latest/meta-data/spot/instance-action)\n", sc.ec2.Addr(), sc.ec2.Addr()+"/imds/")
	fmt.Fprintf(out, "    Compute API   %s   (metadata: %s/vm/<name>/computeMetadata/v1/instance/preempted)\n", sc.gce.URL(), sc.gce.URL())
	fmt.Fprintf(out, "\ntemporal CLI:     temporal --address %s --namespace %s workflow list\n", srv.Address(), srv.Namespace())
	fmt.Fprintf(out, "                  temporal --address %s --namespace %s operator search-attribute list\n", srv.Address(), srv.Namespace())
	fmt.Fprintf(out, "schooner CLI:     schooner train submit examples/demo.yaml --time-scale %g --address %s --watch\n", f.stack.TimeScale, srv.Address())
	fmt.Fprintf(out, "                  schooner nodes --address %s --namespace %s\n", srv.Address(), srv.Namespace())
	fmt.Fprintf(out, "                  schooner cloud offerings --cloud aws --aws-endpoint %s\n", sc.ec2.Addr())
	fmt.Fprintf(out, "                  schooner cloud offerings --cloud gcp --gcp-endpoint %s\n\nCtrl-C to stop.\n", sc.gce.URL())
}

// stopWithin stops the stack, and if that hangs past limit, says so and exits: a developer
// pressing Ctrl-C must get their terminal back.
func stopWithin(s *stack.Stack, limit time.Duration, log zerolog.Logger) {
	began := time.Now()
	if err := s.Stop(limit); err != nil {
		log.Error().Msgf("shutdown did not finish within %s; exiting anyway", limit)
		os.Exit(1)
	}
	log.Info().Str("took", time.Since(began).Round(time.Millisecond).String()).Msg("stopped")
}
