// Package integration runs schooner against a real, embedded Temporal server. It is the one
// test package that links the server, so the unit tests of every other package stay fast.
package integration

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/devserver/stack"
	"github.com/schooner-ml/schooner/internal/wait"
)

// stopWithin bounds every stack's shutdown in these tests.
const stopWithin = 30 * time.Second

// env is one embedded server with a client connected to it.
type env struct {
	*stack.Stack
	log zerolog.Logger
}

// startServer starts an embedded server on free ports, with schooner's search attributes
// and no workers. dataDir "" keeps it in memory.
func startServer(t *testing.T, dataDir string, withUI bool) *env {
	t.Helper()
	e := &env{log: testLogger(t)}
	e.Stack = startStack(t, stack.Options{DataDir: dataDir, Headless: !withUI, Logger: e.log, ServerOnly: true})
	return e
}

// startStack starts a stack that the test's end stops.
func startStack(t *testing.T, o stack.Options) *stack.Stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := stack.Start(ctx, o)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Stop(stopWithin)) })
	return s
}

// testLogger logs warnings and errors into the test's output; SCHOONER_TEST_LOG_LEVEL (debug,
// info, ...) shows more when a failure needs the inference workers' own lines, which are logged
// at info.
func testLogger(t *testing.T) zerolog.Logger {
	level := zerolog.WarnLevel
	if l, err := zerolog.ParseLevel(os.Getenv("SCHOONER_TEST_LOG_LEVEL")); err == nil && l != zerolog.NoLevel {
		level = l
	}
	return zerolog.New(zerolog.NewTestWriter(t)).Level(level)
}

// eventually polls cond until it holds or the deadline passes; tests never sleep blindly.
func eventually(t *testing.T, within time.Duration, cond func() bool, what string) {
	t.Helper()
	wait.For(t, within, 50*time.Millisecond, cond, "%s", what)
}
