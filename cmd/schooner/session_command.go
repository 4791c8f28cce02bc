package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/workers"
)

// sessionFunc is the body of a command that talks to Temporal: it runs once the session is
// up, with the command (for its output) and its arguments.
type sessionFunc func(ctx context.Context, cmd *cobra.Command, s *session, args []string) error

// newSessionCommand completes c as a command that talks to Temporal: it takes the client
// flags and runs run in a session of the cluster they name (withSession), so every such
// command reaches the cluster, logs and stops on Ctrl-C the same way.
func newSessionCommand(g *globals, c *cobra.Command, run sessionFunc) *cobra.Command {
	return bindSession(g, c, new(string), new(time.Duration), run)
}

// newWorkerSubcommand completes c as a `schooner worker` command: no arguments, the client
// flags, --metrics-addr, whose address the session serves the SDK's metrics on while run
// runs the worker, and --wait-for-server: a worker started before its cluster is up waits
// for it, as one does that a process manager starts beside the server.
func newWorkerSubcommand(g *globals, c *cobra.Command, run func(ctx context.Context, s *session) error) *cobra.Command {
	var metricsAddr string
	var wait time.Duration
	c.Args = cobra.NoArgs
	c.Flags().StringVar(&metricsAddr, "metrics-addr", "", "serve worker metrics for Prometheus on this host:port")
	c.Flags().DurationVar(&wait, "wait-for-server", 5*time.Minute,
		"keep trying a Temporal server that does not answer yet this long at start, warning at every try (0: exit at once)")
	return bindSession(g, c, &metricsAddr, &wait, func(ctx context.Context, _ *cobra.Command, s *session, _ []string) error {
		return run(ctx, s)
	})
}

// bindSession sets c's RunE to run in a session that serves metrics on *metricsAddr and
// waits *wait for a server that is not up yet (both read when the command runs, after the
// flags are parsed; empty and 0: none) and binds the client flags.
func bindSession(g *globals, c *cobra.Command, metricsAddr *string, wait *time.Duration, run sessionFunc) *cobra.Command {
	var cfg workers.ClientConfig
	c.RunE = func(cmd *cobra.Command, args []string) error {
		cfg.WaitForServer = *wait
		return withSession(cmd, g, cfg, *metricsAddr, func(ctx context.Context, s *session) error {
			return run(ctx, cmd, s, args)
		})
	}
	addClientFlags(c.Flags(), &cfg)
	return c
}
