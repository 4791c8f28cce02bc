package main

import (
	"github.com/spf13/cobra"
)

func newTrainCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Submit, watch and cancel training jobs (TrainingJob workflows)",
		Long: `train drives training jobs. A job is a TrainingJob workflow on the schooner-control
queue whose id is the job id; everything here is also possible with the plain temporal CLI
(each command prints the equivalent).

  schooner train submit examples/demo.yaml --watch
  schooner train list
  schooner train status <job-id> [--json]
  schooner train watch <job-id>
  schooner train cancel <job-id>`,
	}
	cmd.AddCommand(newTrainSubmitCommand(g), newTrainStatusCommand(g), newTrainListCommand(g),
		newTrainWatchCommand(g), newTrainCancelCommand(g))
	return cmd
}
