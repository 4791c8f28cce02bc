//go:build !agentonly

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/schooner-ml/schooner/internal/netaddr"
)

// servePprof serves the Go profiler (heap, CPU, goroutines) for `go tool pprof` on addr until
// ctx ends; an empty addr serves nothing. Profiles show code and data of the process, so only
// a loopback address is accepted.
func servePprof(ctx context.Context, addr string) (string, error) {
	if addr == "" {
		return "", nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("invalid --pprof-addr %q: %w", addr, err)
	}
	if !netaddr.IsLoopback(host) {
		return "", fmt.Errorf("invalid --pprof-addr %q: the profiler is served on a loopback address only (127.0.0.1 or ::1)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("serving the profiler on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener is gone; nothing useful left to do
		}
	}()
	return ln.Addr().String(), nil
}
