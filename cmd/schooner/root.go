package main

import (
	"io"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/workers"
)

// globals are the flags every command shares.
type globals struct {
	logLevel  string
	logFormat string
}

func (g *globals) logger() (zerolog.Logger, error) { return g.loggerTo(nil) }

// loggerTo is the logger of the global flags writing to out (nil: standard error); a command
// passes its own error stream, which is standard error unless a test set another.
func (g *globals) loggerTo(out io.Writer) (zerolog.Logger, error) {
	return workers.NewLogger(workers.LogOptions{Level: g.logLevel, Format: g.logFormat, Out: out})
}

func newRootCommand() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "schooner",
		Short: "Cost-driven ML on cheap, unreliable and shared GPUs, orchestrated by Temporal",
		Long: `schooner runs long training jobs on spot GPUs across zones and clouds, keeps LLM
serving alive when a machine is lost, and packs GPUs that would sit half idle. Every job is a
durable Temporal workflow: watch it in the Temporal UI, drive it with this CLI or with the
plain 'temporal' CLI.

Start here:
  schooner dev               run a Temporal server, its UI and all workers in one process
  schooner demo              run a spot training job end to end on a simulated market
  schooner train submit job.yaml --watch
                             start a training job and follow it
  schooner nodes             ask every node agent for its GPUs`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level: trace, debug, info, warn, error")
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "console", "log format: console (for people) or json (for log pipelines)")
	root.AddCommand(newWorkerCommand(g), newNodesCommand(g), newGPUCommand(g), newCloudCommand(), newPlanCommand(g), newProfileCommand(), newCkptCommand(g), newTrainCommand(g), newPolicyCommand(), newCodecCommand())
	root.AddCommand(newKVCacheCommand(g), newServeCommand(g), newColocateCommand(g))
	addEmbeddedCommands(root, g)
	addDemoCommand(root, g)
	return root
}
