package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers"
)

type submitFlags struct {
	cfg       workers.ClientConfig
	timeScale float64
	watch     bool
	dryRun    bool
	store     string
}

func newTrainSubmitCommand(g *globals) *cobra.Command {
	f := &submitFlags{}
	cmd := &cobra.Command{
		Use:   "submit SPEC",
		Short: "Validate a job spec (YAML or JSON) and start it as a TrainingJob workflow",
		Long: `submit reads a job spec (examples/ has annotated ones), applies the defaults, validates
it (every problem is printed, nothing is started if there is one) and starts a TrainingJob
workflow on schooner-control with id train-<name>-<6 random characters>.

On a simulated cloud (schooner dev --time-scale N), pass the same --time-scale so iteration
times and costs convert between wall and simulated time.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := loadSpec(args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if f.store != "" {
				spec.Checkpoint.Store = f.store
			}
			if f.dryRun {
				fmt.Fprintf(cmd.OutOrStdout(), "%s is valid\n", args[0])
				return nil
			}
			return withTrainClient(cmd, g, f.cfg, func(ctx context.Context, tc *trainClient) error {
				id, err := submitJob(ctx, tc.c, spec, f.timeScale)
				if err != nil {
					return err
				}
				printSubmitted(cmd.OutOrStdout(), tc, id)
				if !f.watch {
					return nil
				}
				st, err := watchJob(ctx, tc.c, id, cmd.OutOrStdout(), isTerminal(cmd.OutOrStdout()), time.Second)
				if err != nil {
					return err
				}
				return jobOutcome(st)
			})
		},
	}
	addClientFlags(cmd.Flags(), &f.cfg)
	cmd.Flags().Float64Var(&f.timeScale, "time-scale", 1, "simulated seconds per wall second of the cloud (schooner dev's --time-scale); 1 for a real cloud")
	cmd.Flags().BoolVar(&f.watch, "watch", false, "watch the job after starting it")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "validate the spec and start nothing")
	cmd.Flags().StringVar(&f.store, "store", "", "override checkpoint.store of the spec")
	return cmd
}

// loadSpec reads, defaults and validates a spec file, printing every problem to errOut.
func loadSpec(path string, errOut io.Writer) (training.Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return training.Spec{}, fmt.Errorf("reading spec: %w", err)
	}
	spec, err := training.ParseSpec(data, training.FormatOf(path))
	if err != nil {
		return spec, fmt.Errorf("%s: %w", path, err)
	}
	spec = spec.WithDefaults()
	if err := spec.Validate(); err != nil {
		if problems := training.Problems(err); len(problems) > 0 {
			fmt.Fprintf(errOut, "%s is not a valid training spec:\n", path)
			for _, p := range problems {
				fmt.Fprintf(errOut, "  %s\n", p)
			}
			return spec, fmt.Errorf("%s: %d problems, nothing started", path, len(problems))
		}
		return spec, err
	}
	return spec, nil
}

// submitJob starts a TrainingJob for a validated spec and returns its job id.
func submitJob(ctx context.Context, c client.Client, spec training.Spec, timeScale float64) (string, error) {
	if timeScale <= 0 {
		return "", fmt.Errorf("invalid --time-scale %v: must be positive", timeScale)
	}
	id := newJobID(spec.Name)
	in := training.JobInput{Spec: spec, TimeScale: timeScale, SubmittedAt: time.Now().UTC()}
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                 id,
		TaskQueue:          taskqueue.Control,
		StaticSummary:      fmt.Sprintf("train %s: %d iterations of %s", spec.Name, spec.Iterations, modelName(spec.Model)),
		WorkflowRunTimeout: 0,
	}, training.WorkflowTrainingJob, in)
	if err != nil {
		return "", fmt.Errorf("starting training job %s: %w", id, err)
	}
	return id, nil
}

func modelName(m training.Model) string {
	if m.Name != "" {
		return m.Name
	}
	return fmt.Sprintf("a %d-layer model (hidden %d)", m.Layers, m.Hidden)
}

// newJobID is train-<name>-<6 random lowercase letters and digits>.
func newJobID(name string) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "train-" + name + "-" + string(b)
}

func printSubmitted(out io.Writer, tc *trainClient, id string) {
	fmt.Fprintf(out, "started training job %s\n\n", id)
	fmt.Fprintf(out, "  watch:   schooner train watch %s --address %s\n", id, tc.cfg.Address)
	fmt.Fprintf(out, "  status:  %s\n", tc.temporalCLI("workflow query --workflow-id "+id+" --type status"))
	fmt.Fprintf(out, "  budget:  %s\n", tc.temporalCLI("workflow update execute --workflow-id "+id+` --name set-budget --input '{"budget":{"usd_per_hour":20}}'`))
	fmt.Fprintf(out, "  cancel:  %s\n\n", tc.temporalCLI("workflow cancel --workflow-id "+id))
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
