package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/serving/router"
	"github.com/schooner-ml/schooner/workers/servingclient"
)

func newServeRouterCommand(g *globals) *cobra.Command {
	var listen, queue string
	cmd := newSessionCommand(g, &cobra.Command{
		Use:   "router DEPLOYMENT-ID",
		Short: "Serve the OpenAI-compatible API of a deployment, following its stages",
		Long: `router serves /v1/completions (streaming with SSE) and /v1/models for one deployment on
--listen. It polls the deployment's "stages" query every half second and sends each completion
to the ready replica with the least work; when a stage is replaced it pauses the affected
requests and resumes them on the replacement from the tokens already delivered (the KV cache
comes back from the replica, not from recomputation).

A deployment with prefill_replicas (prompt–token disaggregation) is served the same way: each
completion's prompt goes first to a prefill replica that feeds the chosen decode replica (the
ready one with the least work), which streams the prompt's KV cache to that replica's holders;
the decode replica then restores it and generates the rest. A decode replica that no prefill
replica feeds prefills its own prompts. Try it with the official OpenAI client or curl:

  curl -N http://127.0.0.1:8000/v1/completions -H 'content-type: application/json' \
    -d '{"model":"tiny","prompt":"hello","max_tokens":32,"stream":true}'`,
		Args: cobra.ExactArgs(1),
	}, func(ctx context.Context, cmd *cobra.Command, s *session, args []string) error {
		sc := servingclient.New(s.client)
		st, err := sc.Status(ctx, args[0])
		if err != nil {
			return err
		}
		spec := serving.Spec{Name: st.Name, Model: serving.Model{Name: st.Model}}
		newQueue, err := routerQueue(queue)
		if err != nil {
			return err
		}
		return runRouter(ctx, s, sc, args[0], spec, listen, newQueue, cmd.OutOrStdout())
	})
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8000", "host:port of the OpenAI-compatible API")
	cmd.Flags().StringVar(&queue, "queue", "heap", "the waiting requests' queue: heap (a mutex and container/heap) or pq (package pq's concurrent priority queue), for comparison")
	return cmd
}

// runRouter serves the OpenAI-compatible API for deployment id on addr until ctx ends,
// following the deployment's stages.
func runRouter(ctx context.Context, s *session, sc *servingclient.Client, id string, spec serving.Spec, addr string,
	newQueue func() router.Queue, out io.Writer) error {
	log := s.log.With().Str("deployment", id).Logger()
	r, err := router.NewPool(router.Options{Model: spec.ModelID(), Deployment: id, MaxQueue: spec.Queue, ContextLength: spec.MaxContext,
		NewQueue: newQueue, Log: &log})
	if err != nil {
		return err
	}
	defer r.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(out, "router for %s: http://%s/v1 (model %s)\n", id, ln.Addr(), spec.ModelID())
	sc.Follow(ctx, id, r, 500*time.Millisecond)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// routerQueue is the --queue flag's queue constructor (nil: the router's default heap).
func routerQueue(name string) (func() router.Queue, error) {
	switch name {
	case "", "heap":
		return nil, nil
	case "pq":
		return router.NewPQueue, nil
	}
	return nil, fmt.Errorf("--queue %q: want heap or pq", name)
}
