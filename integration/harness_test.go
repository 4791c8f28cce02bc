// Package integration runs schooner against a real, embedded Temporal server. It is the one
// test package that links the server, so the unit tests of every other package stay fast.
package integration

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/devserver"
	"github.com/schooner-ml/schooner/workers"
)

// env is one embedded server with a client connected to it.
type env struct {
	server *devserver.Server
	client client.Client
	log    zerolog.Logger
}

// startServer starts an embedded server on free ports. dataDir "" keeps it in memory.
func startServer(t *testing.T, dataDir string, withUI bool) *env {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	port, err := devserver.FreePort("127.0.0.1")
	require.NoError(t, err)
	opts := devserver.Options{Port: port, Headless: !withUI, DataDir: dataDir, Logger: log, ServerLogLevel: "error"}
	if withUI {
		opts.UIPort, err = devserver.FreePort("127.0.0.1")
		require.NoError(t, err)
	}
	srv, err := devserver.Start(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := workers.Dial(ctx, workers.ClientConfig{Address: srv.Address(), Namespace: srv.Namespace()},
		workers.NewTemporalLogger(log), nil)
	if err != nil {
		srv.Stop()
		require.NoError(t, err)
	}
	e := &env{server: srv, client: c, log: log}
	t.Cleanup(e.stop)
	return e
}

func (e *env) stop() {
	e.client.Close()
	e.server.Stop()
}

// eventually polls cond until it holds or the deadline passes; tests never sleep blindly.
func eventually(t *testing.T, within time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", within, what)
}
