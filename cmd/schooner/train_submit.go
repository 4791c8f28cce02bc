package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers"
	"github.com/schooner-ml/schooner/workers/trainingclient"
)

func newTrainSubmitCommand(g *globals) *cobra.Command {
	var cfg workers.ClientConfig
	var timeScale float64
	var watch, dryRun bool
	var store string
	cmd := &cobra.Command{
		Use:   "submit SPEC",
		Short: "Validate a job spec (YAML or JSON) and start it as a TrainingJob workflow",
		Long: `submit reads a job spec (examples/ has annotated ones), applies the defaults, validates
it (every problem is printed, nothing is started if there is one) and starts a TrainingJob
workflow on schooner-control with id train-<name>-<6 random characters>. The workflow checks
the spec again (against the control plane's limits too), so the plain temporal CLI gets the
same answers. The job asks its cloud for the time scale (the simulated market's --time-scale
under schooner dev, 1 for a real cloud): nothing to pass here.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := loadSpec(args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if store != "" {
				spec.Checkpoint.Store = store
			}
			for _, a := range spec.Advisories() {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %s\n", a)
			}
			if dryRun {
				fmt.Fprintf(cmd.OutOrStdout(), "%s is valid\n", args[0])
				return nil
			}
			return withSession(cmd, g, cfg, "", func(ctx context.Context, s *session) error {
				id, err := s.jobs.Submit(ctx, spec, trainingclient.SubmitOptions{})
				if err != nil {
					return err
				}
				printSubmitted(cmd.OutOrStdout(), s, id)
				if !watch {
					return nil
				}
				st, err := watchJob(ctx, s.jobs, id, cmd.OutOrStdout(), time.Second)
				if err != nil {
					return err
				}
				return jobOutcome(st)
			})
		},
	}
	addClientFlags(cmd.Flags(), &cfg)
	cmd.Flags().Float64Var(&timeScale, "time-scale", 0, "ignored: the job asks its cloud")
	_ = cmd.Flags().MarkDeprecated("time-scale", "the job asks its cloud for its time scale; the flag is ignored")
	cmd.Flags().BoolVar(&watch, "watch", false, "watch the job after starting it")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate the spec and start nothing")
	cmd.Flags().StringVar(&store, "store", "", "override checkpoint.store of the spec")
	return cmd
}

// loadSpec reads, defaults and validates a spec file, printing every problem to errOut.
func loadSpec(path string, errOut io.Writer) (training.Spec, error) {
	return loadSpecFile(path, "training", training.ParseSpec, errOut)
}

func printSubmitted(out io.Writer, s *session, id string) {
	fmt.Fprintf(out, "started training job %s\n\n", id)
	fmt.Fprintf(out, "  watch:   schooner train watch %s --address %s\n", id, s.cfg.Address)
	fmt.Fprintf(out, "  status:  %s\n", s.temporalCLI("workflow query --workflow-id "+id+" --type status"))
	fmt.Fprintf(out, "  budget:  %s\n", s.temporalCLI("workflow update execute --workflow-id "+id+` --name set-budget --input '{"budget":{"usd_per_hour":20}}'`))
	fmt.Fprintf(out, "  cancel:  %s\n\n", s.temporalCLI("workflow cancel --workflow-id "+id))
}

// jobOutcome turns a job's final phase into the command's exit status.
func jobOutcome(st training.JobStatus) error {
	switch st.Phase {
	case training.PhaseCompleted:
		return nil
	case "":
		return errors.New("the job ended without a status")
	default:
		if st.Error != "" {
			return fmt.Errorf("job %s %s: %s", st.JobID, st.Phase, st.Error)
		}
		return fmt.Errorf("job %s %s", st.JobID, st.Phase)
	}
}
