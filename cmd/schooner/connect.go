package main

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/workers"
	"github.com/schooner-ml/schooner/workers/trainingclient"
)

// session is what a command that talks to Temporal holds: a logger, the cluster it reached,
// a Temporal client, the typed client of training jobs on it and, when asked for, a metrics
// endpoint.
type session struct {
	log         zerolog.Logger
	cfg         workers.ClientConfig
	client      client.Client
	jobs        *trainingclient.Client
	metricsAddr string
}

// withSession is how every command that talks to Temporal starts: a logger from the global
// flags, a context that Ctrl-C ends, and a client of the cluster cfg names (serving the SDK's
// metrics on metricsAddr unless it is empty), closed when fn returns.
func withSession(cmd *cobra.Command, g *globals, cfg workers.ClientConfig, metricsAddr string, fn func(ctx context.Context, s *session) error) error {
	return withLogger(cmd, g, func(ctx context.Context, log zerolog.Logger) error {
		s, err := connect(ctx, log, cfg, metricsAddr)
		if err != nil {
			return err
		}
		defer s.Close()
		return fn(ctx, s)
	})
}

// withLogger is how every command that runs until it is done or stopped starts: a logger from
// the global flags and a context that Ctrl-C ends.
func withLogger(cmd *cobra.Command, g *globals, fn func(ctx context.Context, log zerolog.Logger) error) error {
	log, err := g.loggerTo(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	ctx, stop := interruptible(cmd)
	defer stop()
	return fn(ctx, log)
}

// interruptible is the context of a CLI command: Ctrl-C ends it.
func interruptible(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
}

// connect dials Temporal with schooner's logger and, when metricsAddr is set, serves the
// SDK's metrics (and Go runtime metrics) there until ctx ends.
func connect(ctx context.Context, log zerolog.Logger, cfg workers.ClientConfig, metricsAddr string) (*session, error) {
	handler, addr, err := serveMetrics(ctx, metricsAddr)
	if err != nil {
		return nil, err
	}
	c, err := workers.Dial(ctx, cfg, sdkLogger(log), handler)
	if err != nil {
		return nil, err
	}
	return &session{log: log, cfg: cfg, client: c, jobs: trainingclient.New(c), metricsAddr: addr}, nil
}

// serveMetrics serves Prometheus metrics on addr until ctx ends and returns the SDK's
// handler for them and the address it listens on; an empty addr serves nothing.
func serveMetrics(ctx context.Context, addr string) (client.MetricsHandler, string, error) {
	if addr == "" {
		return nil, "", nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	h, err := workers.NewPrometheusMetrics(reg)
	if err != nil {
		return nil, "", err
	}
	bound, err := workers.ServeMetrics(ctx, addr, reg)
	if err != nil {
		return nil, "", err
	}
	return h, bound.String(), nil
}

// sdkLogger is the Temporal SDK's logger: the SDK is chatty at info (every worker start), so
// it stays one level quieter than ours unless SCHOONER_SDK_LOG=debug.
func sdkLogger(log zerolog.Logger) *workers.TemporalLogger {
	sdkLog := log.With().Str("component", "temporal-sdk").Logger()
	if sdkLog.GetLevel() < zerolog.WarnLevel {
		sdkLog = sdkLog.Level(zerolog.WarnLevel)
	}
	if strings.EqualFold(os.Getenv("SCHOONER_SDK_LOG"), "debug") {
		sdkLog = sdkLog.Level(zerolog.DebugLevel)
	}
	return workers.NewTemporalLogger(sdkLog)
}

func (s *session) Close() {
	if s.client != nil {
		s.client.Close()
	}
}

// temporalCLI prefixes a temporal CLI command with the flags that reach this cluster.
func (s *session) temporalCLI(args string) string {
	return "temporal --address " + s.cfg.Address + " --namespace " + s.cfg.Namespace + " " + args
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
}

// defaultNodeID turns the host name into a task-queue-safe id.
func defaultNodeID() string {
	h := strings.ToLower(hostname())
	var b strings.Builder
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	return strings.Trim(b.String(), "-")
}
