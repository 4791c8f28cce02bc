package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers"
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

// trainClient is what every train subcommand holds: a client and the address it reached,
// for the temporal CLI hints.
type trainClient struct {
	cfg workers.ClientConfig
	c   client.Client
}

// dialTrain connects to Temporal for a short-lived train command (no metrics endpoint).
func dialTrain(ctx context.Context, g *globals, cfg workers.ClientConfig) (*trainClient, error) {
	log, err := g.logger()
	if err != nil {
		return nil, err
	}
	sess, err := connect(ctx, log, cfg, "")
	if err != nil {
		return nil, err
	}
	return &trainClient{cfg: cfg, c: sess.client}, nil
}

func (t *trainClient) Close() { t.c.Close() }

// withTrainClient runs fn for a train subcommand: a context that Ctrl-C ends and a client of
// the cluster the flags name, closed afterwards.
func withTrainClient(cmd *cobra.Command, g *globals, cfg workers.ClientConfig, fn func(ctx context.Context, tc *trainClient) error) error {
	ctx, stop := interruptible(cmd)
	defer stop()
	tc, err := dialTrain(ctx, g, cfg)
	if err != nil {
		return err
	}
	defer tc.Close()
	return fn(ctx, tc)
}

// temporalCLI prefixes a temporal CLI command with the flags that reach this cluster.
func (t *trainClient) temporalCLI(args string) string {
	return fmt.Sprintf("temporal --address %s --namespace %s %s", t.cfg.Address, t.cfg.Namespace, args)
}

// interruptible is the context of a CLI command: Ctrl-C ends it.
func interruptible(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
}

// queryStatus asks a job for its status. A job that has closed answers with its result
// when no worker is left to answer the query.
func queryStatus(ctx context.Context, c client.Client, jobID string) (training.JobStatus, error) {
	var st training.JobStatus
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := c.QueryWorkflow(qctx, jobID, "", training.QueryStatus)
	if err == nil {
		if err := v.Get(&st); err != nil {
			return st, fmt.Errorf("decoding status of %s: %w", jobID, err)
		}
		return st, nil
	}
	if rerr := c.GetWorkflow(ctx, jobID, "").Get(qctx, &st); rerr == nil {
		return st, nil
	}
	return st, fmt.Errorf("querying status of %s: %w", jobID, err)
}
