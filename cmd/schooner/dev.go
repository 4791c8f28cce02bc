//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/devserver"
	"github.com/schooner-ml/schooner/gpu/nvml"
	"github.com/schooner-ml/schooner/workers"
)

type devFlags struct {
	dataDir        string
	ip             string
	port           int
	uiPort         int
	headless       bool
	namespace      string
	nodeID         string
	metricsAddr    string
	serverLogLevel string
	timeScale      float64
	simSeed        int64
	simEC2Addr     string
	simGCEAddr     string
}

func newDevCommand(g *globals) *cobra.Command {
	f := &devFlags{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a Temporal server, the Temporal UI, the control worker and a node agent in one process",
		Long: `dev runs everything schooner needs on one machine: a real Temporal server persisted in
SQLite under --data-dir (workflows survive a restart), the Temporal UI, schooner's search
attributes, the control worker (with the training activities, on the simulated spot market),
a node agent for this machine and one node agent per simulated instance, so training jobs run:
  schooner train submit examples/demo.yaml --time-scale <same as --time-scale> --watch

Point the temporal CLI at it with the flags it prints, e.g.
  temporal --address 127.0.0.1:7233 --namespace default workflow list

Ctrl-C stops everything within 10 seconds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.logger()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runDev(ctx, f, log, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.dataDir, "data-dir", ".schooner", "directory for the Temporal SQLite database and schooner's local state")
	fs.StringVar(&f.ip, "ip", "127.0.0.1", "address to bind the server and UI to")
	fs.IntVar(&f.port, "port", 7233, "Temporal gRPC port")
	fs.IntVar(&f.uiPort, "ui-port", 8233, "Temporal UI port")
	fs.BoolVar(&f.headless, "headless", false, "do not serve the Temporal UI")
	fs.StringVar(&f.namespace, "namespace", "default", "Temporal namespace to create and use")
	fs.StringVar(&f.nodeID, "node-id", defaultNodeID(), "id of this machine's node agent (task queue schooner-node-<id>)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "127.0.0.1:9464", "serve worker metrics for Prometheus here (empty to disable)")
	fs.StringVar(&f.serverLogLevel, "server-log-level", "warn", "log level of the embedded Temporal server")
	fs.Float64Var(&f.timeScale, "time-scale", 1, "simulated seconds per wall second in the simulated spot market")
	fs.Int64Var(&f.simSeed, "sim-seed", 1, "seed of the simulated spot market (same seed, same market)")
	fs.StringVar(&f.simEC2Addr, "sim-ec2-addr", defaultSimEC2Addr, "where to serve the simulated EC2 API and instance metadata")
	fs.StringVar(&f.simGCEAddr, "sim-gce-addr", defaultSimGCEAddr, "where to serve the simulated Compute Engine API and metadata server")
	return cmd
}

// devStack is what `schooner dev` runs; Stop tears it down in reverse order.
type devStack struct {
	server  *devserver.Server
	sim     *simCloud
	session *session
	control interface{ Stop() }
	node    *workers.NodeAgent
	// nodes are the node agents of the simulated instances and the preemption relay.
	nodes interface{ Stop() }
}

func (d *devStack) Stop() {
	if d.nodes != nil {
		d.nodes.Stop()
	}
	if d.node != nil {
		d.node.Stop(false)
	}
	if d.control != nil {
		d.control.Stop()
	}
	if d.session != nil {
		d.session.Close()
	}
	if d.sim != nil {
		d.sim.Stop()
	}
	if d.server != nil {
		d.server.Stop()
	}
}

func runDev(ctx context.Context, f *devFlags, log zerolog.Logger, out io.Writer) error {
	began := time.Now()
	if f.timeScale <= 0 {
		return fmt.Errorf("invalid --time-scale %v: must be positive", f.timeScale)
	}
	stack := &devStack{}
	srv, err := devserver.Start(devserver.Options{
		IP: f.ip, Port: f.port, UIPort: f.uiPort, Headless: f.headless,
		DataDir: f.dataDir, Namespace: f.namespace, Logger: log, ServerLogLevel: f.serverLogLevel,
	})
	if err != nil {
		return err
	}
	stack.server = srv
	defer stopWithin(stack, 10*time.Second, log)

	sess, err := connect(ctx, log, workers.ClientConfig{Address: srv.Address(), Namespace: f.namespace}, f.metricsAddr)
	if err != nil {
		return err
	}
	stack.session = sess
	if stack.sim, err = startSimCloud(ctx, f, log); err != nil {
		return err
	}
	if err := workers.EnsureSearchAttributes(ctx, sess.client, f.namespace); err != nil {
		return err
	}
	if err := stack.startTraining(ctx, f.timeScale, f.dataDir, log); err != nil {
		return err
	}
	stack.node = &workers.NodeAgent{ID: f.nodeID, Hostname: hostname(), GPUs: nvml.Real{}, Client: sess.client, Logger: log}
	if err := stack.node.Start(ctx); err != nil {
		return err
	}
	printDevBanner(out, srv, f, sess.metricsAddr, stack.sim, time.Since(began))
	<-ctx.Done()
	log.Info().Msg("stopping: node agent, workers, UI, Temporal server")
	return nil
}

func printDevBanner(out io.Writer, srv *devserver.Server, f *devFlags, metricsAddr string, sc *simCloud, took time.Duration) {
	fmt.Fprintf(out, "\nschooner dev is ready (%.1fs)\n", took.Seconds())
	fmt.Fprintf(out, "  Temporal gRPC   %s   namespace %s\n", srv.Address(), srv.Namespace())
	if ui := srv.UIAddress(); ui != "" {
		fmt.Fprintf(out, "  Temporal UI     http://%s/namespaces/%s/workflows\n", ui, srv.Namespace())
	}
	if metricsAddr != "" {
		fmt.Fprintf(out, "  Metrics         http://%s/metrics\n", metricsAddr)
	}
	fmt.Fprintf(out, "  Data            %s\n", devserver.DatabaseFile(f.dataDir))
	fmt.Fprintf(out, "  Node agent      %s (queue schooner-node-%s)\n", f.nodeID, f.nodeID)
	fmt.Fprintf(out, "  Simulated cloud seed %d, %gx wall time, starts %s (simulated)\n", f.simSeed, f.timeScale, sc.market.Now().Format(time.RFC3339))
	fmt.Fprintf(out, "    EC2 API       %s   (instance metadata: %s<instance-id>/latest/meta-data/spot/instance-action)\n", sc.ec2.Addr(), sc.ec2.Addr()+"/imds/")
	fmt.Fprintf(out, "    Compute API   %s   (metadata: %s/vm/<name>/computeMetadata/v1/instance/preempted)\n", sc.gce.URL(), sc.gce.URL())
	fmt.Fprintf(out, "\ntemporal CLI:     temporal --address %s --namespace %s workflow list\n", srv.Address(), srv.Namespace())
	fmt.Fprintf(out, "                  temporal --address %s --namespace %s operator search-attribute list\n", srv.Address(), srv.Namespace())
	fmt.Fprintf(out, "schooner CLI:     schooner train submit examples/demo.yaml --time-scale %g --address %s --watch\n", f.timeScale, srv.Address())
	fmt.Fprintf(out, "                  schooner nodes --address %s --namespace %s\n", srv.Address(), srv.Namespace())
	fmt.Fprintf(out, "                  schooner cloud offerings --cloud aws --aws-endpoint %s\n", sc.ec2.Addr())
	fmt.Fprintf(out, "                  schooner cloud offerings --cloud gcp --gcp-endpoint %s\n\nCtrl-C to stop.\n", sc.gce.URL())
}

// stopWithin stops the stack, and if that hangs past limit, says so and exits: a developer
// pressing Ctrl-C must get their terminal back.
func stopWithin(stack *devStack, limit time.Duration, log zerolog.Logger) {
	done := make(chan struct{})
	began := time.Now()
	go func() { stack.Stop(); close(done) }()
	select {
	case <-done:
		log.Info().Str("took", time.Since(began).Round(time.Millisecond).String()).Msg("stopped")
	case <-time.After(limit):
		log.Error().Msgf("shutdown did not finish within %s; exiting anyway", limit)
		os.Exit(1)
	}
}
