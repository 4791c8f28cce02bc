//go:build !agentonly

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/schooner-ml/schooner/devserver/stack"
)

// demoCommonFlags are the flags `schooner demo` and `schooner demo serve` share.
type demoCommonFlags struct {
	stack    stack.Options
	outDir   string
	specPath string
	asJSON   bool
	noFaults bool
	timeout  time.Duration
}

// demoFlagDefaults are what differs between the demos in the shared flags: help texts and defaults.
type demoFlagDefaults struct {
	dataDirHelp  string
	outDir       string
	outHelp      string
	specHelp     string
	noFaultsHelp string
	timeScale    float64
	seed         int64
	timeout      time.Duration
	timeoutHelp  string
}

// addDemoFlags registers the shared flags on fs.
func (c *demoCommonFlags) addDemoFlags(fs *pflag.FlagSet, d demoFlagDefaults) {
	fs.StringVar(&c.stack.DataDir, "data-dir", "", d.dataDirHelp)
	fs.StringVar(&c.outDir, "out", d.outDir, d.outHelp)
	fs.StringVar(&c.specPath, "spec", "", d.specHelp)
	addServerFlags(fs, &c.stack, 0, "Temporal gRPC port (0: a free one)", "Temporal UI port (a free one if taken)")
	fs.BoolVar(&c.asJSON, "json", false, "print the summary as one JSON object on stdout (progress goes to stderr)")
	fs.BoolVar(&c.noFaults, "no-faults", false, d.noFaultsHelp)
	fs.Float64Var(&c.stack.TimeScale, "time-scale", d.timeScale, "simulated seconds per wall second")
	fs.Int64Var(&c.stack.Seed, "seed", d.seed, "seed of the simulated market")
	addTraceFlag(fs, &c.stack)
	fs.DurationVar(&c.timeout, "timeout", d.timeout, d.timeoutHelp)
}

// check refuses shared flags a demo cannot run with, before anything starts.
func (c *demoCommonFlags) check() error {
	if err := positiveTimeScale(c.stack.TimeScale); err != nil {
		return err
	}
	if c.timeout <= 0 {
		return fmt.Errorf("invalid --timeout %s: must be positive (wall time before the demo gives up)", c.timeout)
	}
	return nil
}

// runDemoCommand is the RunE of a demo: it quiets the log to level unless --log-level is set,
// runs the demo until it ends or is interrupted and, with --json, prints its summary as one
// JSON object on stdout (progress then goes to stderr) once started says the demo got going.
func runDemoCommand[S any](cmd *cobra.Command, g *globals, level string, asJSON bool,
	run func(ctx context.Context, log zerolog.Logger, progress io.Writer) (S, error), started func(S) bool) error {
	if !cmd.Flags().Changed("log-level") {
		g.logLevel = level
		if asJSON {
			// stderr carries the progress of a run read by a program: the components'
			// warnings about the demo's own injected faults would drown it.
			g.logLevel = "error"
		}
	}
	return withLogger(cmd, g, func(ctx context.Context, log zerolog.Logger) error {
		progress := cmd.OutOrStdout()
		if asJSON {
			progress = cmd.ErrOrStderr() // stdout carries the one JSON object only
		}
		sum, err := run(ctx, log, progress)
		if asJSON && started(sum) {
			if jerr := json.NewEncoder(cmd.OutOrStdout()).Encode(sum); jerr != nil && err == nil {
				err = jerr
			}
		}
		return err
	})
}

// demoDataDir gives o a temporary data directory (named after prefix) unless it has one;
// cleanup removes it.
func demoDataDir(o *stack.Options, prefix string) (cleanup func(), err error) {
	if o.DataDir != "" {
		return func() {}, nil
	}
	tmp, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, fmt.Errorf("creating a data directory: %w", err)
	}
	o.DataDir = tmp
	return func() { _ = os.RemoveAll(tmp) }, nil
}

// startDemoStack starts the demo's stack (on a free UI port if o's is taken, logging to log)
// and prints where its Temporal server and UI are, after name; the line is left open.
func startDemoStack(ctx context.Context, o stack.Options, log zerolog.Logger, out io.Writer, name string) (*stack.Stack, error) {
	if err := checkTraceDir(o, out); err != nil {
		return nil, err
	}
	if !o.Headless && !portFree(o.IP, o.UIPort) {
		o.UIPort = 0 // a free one
	}
	o.Logger, o.SDKLogger = log, demoSDKLogger(log)
	s, err := stack.Start(ctx, o)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "%s: Temporal %s", name, s.Server.Address())
	if ui := s.Server.UIAddress(); ui != "" {
		fmt.Fprintf(out, ", UI http://%s/namespaces/%s/workflows", ui, s.Server.Namespace())
	}
	return s, nil
}
