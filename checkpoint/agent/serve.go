package agent

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/schooner-ml/schooner/checkpoint"
)

// ListenAndServe listens on the Unix socket path and serves until the agent is closed. A
// socket file left by an agent that died is replaced; one that answers is an error, so two
// agents never share a directory by accident.
func (a *Agent) ListenAndServe(path string) error {
	l, err := Listen(path)
	if err != nil {
		return err
	}
	return a.Serve(l)
}

// Listen opens the agent's Unix socket (creating its directory), replacing a stale socket file.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating socket directory: %w", err)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = c.Close()
		return nil, fmt.Errorf("listening on %s: another agent answers there", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing stale socket %s: %w", path, err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	return l, nil
}

// Serve accepts connections on l until the agent is closed; it then returns nil.
func (a *Agent) Serve(l net.Listener) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		_ = l.Close()
		return checkpoint.ErrClosed
	}
	a.listeners = append(a.listeners, l)
	a.mu.Unlock()
	a.log.Info().Str("socket", l.Addr().String()).Str("mode", string(a.opts.Mode)).Str("dir", a.opts.Dir).
		Str("shm", a.opts.ShmDir).Msg("checkpoint agent listening")
	for {
		nc, err := l.Accept()
		if err != nil {
			if a.isClosed() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("accepting on %s: %w", l.Addr(), err)
		}
		c := newConn(a, nc)
		if !a.track(c) {
			_ = nc.Close()
			return nil
		}
		go func() {
			defer a.served.Done()
			c.serve()
		}()
	}
}

func (a *Agent) track(c *conn) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.conns[c] = struct{}{}
	a.served.Add(1)
	return true
}

func (a *Agent) untrack(c *conn) {
	a.mu.Lock()
	delete(a.conns, c)
	a.mu.Unlock()
}

func (a *Agent) isClosed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closed
}
