package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/workers/servingclient"
)

// scaleRequest is the scale update the flags ask for: only the pools whose flag was given
// change, so the prefill pool and the decode replicas scale on their own.
func scaleRequest(cmd *cobra.Command, replicas, prefill int) (serving.ScaleRequest, error) {
	var req serving.ScaleRequest
	fs := cmd.Flags()
	if !fs.Changed("replicas") && !fs.Changed("prefill-replicas") {
		return req, errors.New("nothing to scale: give --replicas, --prefill-replicas or both")
	}
	if fs.Changed("replicas") {
		if replicas < 1 {
			return req, fmt.Errorf("--replicas must be at least 1 (got %d); stop the deployment to end it", replicas)
		}
		req.Replicas = replicas
	}
	if fs.Changed("prefill-replicas") {
		if prefill < 0 {
			return req, fmt.Errorf("--prefill-replicas must be 0 or more (got %d)", prefill)
		}
		req.PrefillReplicas = &prefill
	}
	return req, nil
}

func newServeScaleCommand(g *globals) *cobra.Command {
	var replicas, prefill int
	cmd := newSessionCommand(g, &cobra.Command{
		Use:   "scale DEPLOYMENT-ID",
		Short: "Change how many replicas a deployment runs, of either pool",
		Long: `scale sends the deployment's scale update and waits until it has laid the replicas out:
new ones are bought, placed and started by the workflow (the router starts using each once all
of its stages are ready); removed ones (the highest numbered) are stopped and their machines
released. --replicas counts the pipeline replicas (the decode replicas of a disaggregated
deployment); --prefill-replicas the prefill pool that computes prompts for them (0 turns
disaggregation off; more than 0 needs kv_replication on). Give either or both: a pool whose
flag is left out keeps its size. The workflow validates the counts and refuses a deployment
that is stopping.

  schooner serve scale serve-chat --replicas 3
  schooner serve scale serve-chat --prefill-replicas 2`,
		Args: cobra.ExactArgs(1),
	}, func(ctx context.Context, cmd *cobra.Command, s *session, args []string) error {
		req, err := scaleRequest(cmd, replicas, prefill)
		if err != nil {
			return err
		}
		st, err := servingclient.New(s.client).Scale(ctx, args[0], req)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "deployment %s: %d replicas, %d prefill replicas, %d GPUs, %s/h\n",
			args[0], st.Replicas, st.PrefillReplicas, st.GPUs, usd(st.USDPerHour))
		return nil
	})
	cmd.Flags().IntVar(&replicas, "replicas", 0, "pipeline (decode) replicas")
	cmd.Flags().IntVar(&prefill, "prefill-replicas", 0, "prefill replicas (prompt–token disaggregation)")
	return cmd
}
