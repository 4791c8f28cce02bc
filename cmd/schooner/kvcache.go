package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/kvcache"
)

func newKVCacheCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kvcache",
		Short: "Run this node's KV-cache holder: serving stages replicate their KV cache to it",
		Long: `kvcache runs the KV-cache holder of LLM serving (DéjàVu-style fault tolerance). Each
pipeline stage streams its KV cache to the holder on the node of the next stage (a ring): the
prompt layer by layer, then every decode step as one frame. When a stage is lost, its
replacement reads the cache back from the holder and generation resumes from the last
acknowledged step instead of recomputing every prompt. The protocol is section 3 of
docs/serving-protocol.md.`,
	}
	cmd.AddCommand(newKVCacheServeCommand(g))
	return cmd
}

type kvcacheServeFlags struct {
	listen, socket, budget, maxPayload, metrics string
}

func newKVCacheServeCommand(g *globals) *cobra.Command {
	var f kvcacheServeFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve KV-cache replicas on a TCP port and a unix socket",
		Long: `serve keeps the KV-cache replicas that stage workers put, inside a memory budget, until
they are dropped. Workers on this host use the unix socket; workers on other nodes the TCP
port. A put beyond --budget is refused with the error "full" (the writer keeps serving,
unreplicated): the holder never evicts anything to make room, so every acknowledged step can
be restored. Size the budget as the replicas you expect: a decode step of 8 sequences of a
32-layer model with 8 KV heads of 128 in bf16 is 1 MiB.

When a stage worker on a GPU first asks for it, the holder makes its arena: shared memory the
size of --budget, allocated whole, that it keeps prompts in and that workers map read-only and
page-lock, so a restore copies nothing on the host (docs/serving-protocol.md, "Arena"). From
then on the holder's memory is the whole budget: size it as memory you give the holder.

Ctrl-C (SIGINT) or SIGTERM stops it; replicas live in memory and go with it.

  schooner kvcache serve --listen 127.0.0.1:7250 --socket /run/schooner/kv.sock --budget 8GiB
  schooner kvcache serve --listen :7250 --socket "" --budget 64GiB --metrics :9250`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runKVCacheServe(cmd, g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:7250", `TCP address for stage workers on other nodes ("" for none)`)
	fl.StringVar(&f.socket, "socket", "/run/schooner/kv.sock", `unix socket for stage workers on this host ("" for none)`)
	fl.StringVar(&f.budget, "budget", "8GiB", "bytes of KV cache held at most: 8GiB, 512MiB, 1073741824")
	fl.StringVar(&f.maxPayload, "max-payload", "256MiB", "largest frame payload a connection may send")
	fl.StringVar(&f.metrics, "metrics", "", "address to serve Prometheus metrics on at /metrics (empty: none)")
	return cmd
}

func runKVCacheServe(cmd *cobra.Command, g *globals, f kvcacheServeFlags) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	budget, err := store.ParseSize(f.budget)
	if err != nil {
		return fmt.Errorf("--budget: %w", err)
	}
	maxPayload, err := store.ParseSize(f.maxPayload)
	if err != nil {
		return fmt.Errorf("--max-payload: %w", err)
	}
	if f.listen == "" && f.socket == "" {
		return errors.New("give --listen, --socket or both")
	}
	h, err := kvcache.New(kvcache.Options{Budget: budget, MaxPayload: uint64(maxPayload), Logger: log})
	if err != nil {
		return err
	}
	var ls []net.Listener
	if f.listen != "" {
		l, err := net.Listen("tcp", f.listen)
		if err != nil {
			return fmt.Errorf("listening on %s: %w", f.listen, err)
		}
		ls = append(ls, l)
	}
	if f.socket != "" {
		if err := os.MkdirAll(filepath.Dir(f.socket), 0o755); err != nil {
			return fmt.Errorf("creating the socket's directory: %w", err)
		}
		l, err := kvcache.ListenUnix(f.socket)
		if err != nil {
			for _, l := range ls {
				_ = l.Close()
			}
			return err
		}
		ls = append(ls, l)
	}
	ctx, stop := interruptible(cmd)
	defer stop()
	served := make(chan error, len(ls)+1)
	for _, l := range ls {
		fmt.Fprintf(cmd.OutOrStdout(), "kv-cache holder listening on %s %s (budget %s)\n", l.Addr().Network(), l.Addr(), f.budget)
		go func() { served <- h.Serve(l) }()
	}
	var ms *http.Server
	if f.metrics != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(h.Collector())
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		ms = &http.Server{Addr: f.metrics, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		fmt.Fprintf(cmd.OutOrStdout(), "metrics on http://%s/metrics\n", f.metrics)
		go func() {
			if err := ms.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
				served <- fmt.Errorf("serving metrics: %w", err)
			}
		}()
	}
	select {
	case err = <-served:
	case <-ctx.Done():
		log.Info().Msg("stopping kv-cache holder")
	}
	if ms != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ms.Shutdown(sctx)
	}
	return errors.Join(err, h.Close())
}
