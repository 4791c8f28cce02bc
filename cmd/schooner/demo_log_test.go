//go:build !agentonly

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loggingDemo is a demo command wired as the real ones are (the root's persistent --log-level,
// runDemoCommand quieting to "warn"), whose run logs at every level, through the SDK's logger
// too, and prints progress; it returns what it wrote on stdout and on stderr.
func loggingDemo(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	g := testGlobals()
	root := &cobra.Command{Use: "schooner", SilenceUsage: true, SilenceErrors: true}
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "")
	var asJSON bool
	demo := &cobra.Command{Use: "demo", RunE: func(cmd *cobra.Command, _ []string) error {
		return runDemoCommand(cmd, g, "warn", asJSON, func(_ context.Context, log zerolog.Logger, progress io.Writer) (map[string]string, error) {
			log.Info().Msg("an info line")
			log.Warn().Msg("a warning about an injected fault")
			log.Error().Msg("an error line")
			demoSDKLogger(log).Warn("a warning of the SDK")
			_, err := io.WriteString(progress, "phase=training iter=1/2\n")
			return map[string]string{"job_id": "j"}, err
		}, func(map[string]string) bool { return true })
	}}
	demo.Flags().BoolVar(&asJSON, "json", false, "")
	root.AddCommand(demo)
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	require.NoError(t, root.ExecuteContext(context.Background()))
	return out.String(), errOut.String()
}

// A --json run's stderr carries its progress and errors only: no warning or info line from
// the components (they would drown the progress a program reads), unless --log-level asks.
func TestDemoJSONStderrHoldsNoWarningsOrInfo(t *testing.T) {
	t.Parallel()
	stdout, stderr := loggingDemo(t, "demo", "--json")
	var sum map[string]string
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum), "stdout is the one JSON object: %q", stdout)
	assert.Equal(t, "j", sum["job_id"])
	assert.Contains(t, stderr, "phase=training iter=1/2", "progress goes to stderr")
	assert.Contains(t, stderr, "ERR an error line")
	assert.NotContains(t, stderr, "WRN")
	assert.NotContains(t, stderr, "INF")

	_, stderr = loggingDemo(t, "demo", "--json", "--log-level", "info")
	assert.Contains(t, stderr, "INF an info line", "an explicit --log-level wins")
	assert.Contains(t, stderr, "WRN a warning about an injected fault")

	stdout, stderr = loggingDemo(t, "demo")
	assert.Contains(t, stdout, "phase=training iter=1/2", "without --json progress goes to stdout")
	assert.Contains(t, stderr, "WRN a warning about an injected fault", "a run for people shows warnings")
	assert.NotContains(t, stderr, "INF")
}
