package workers

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func decodeLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		m := map[string]any{}
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		out = append(out, m)
	}
	return out
}

func TestTemporalLoggerFieldsAndLevels(t *testing.T) {
	var buf bytes.Buffer
	l := NewTemporalLogger(zerolog.New(&buf).Level(zerolog.InfoLevel))
	l.Debug("hidden", "k", 1)
	l.Info("started", "WorkflowID", "wf-1", "Attempt", 2)
	l.Warn("odd", "a", 1, "dangling")
	l.Error("failed", "error", errors.New("boom"), 42, "numeric-key")

	lines := decodeLines(t, &buf)
	require.Len(t, lines, 3, "debug is below the configured level")
	assert.Equal(t, "info", lines[0]["level"])
	assert.Equal(t, "started", lines[0]["message"])
	assert.Equal(t, "wf-1", lines[0]["WorkflowID"])
	assert.EqualValues(t, 2, lines[0]["Attempt"])
	assert.Equal(t, "dangling", lines[1]["extra"])
	assert.Equal(t, "warn", lines[1]["level"])
	assert.Equal(t, "boom", lines[2]["error"])
	assert.Equal(t, "numeric-key", lines[2]["42"])
}

func TestTemporalLoggerWithDoesNotMutateParent(t *testing.T) {
	var buf bytes.Buffer
	parent := NewTemporalLogger(zerolog.New(&buf))
	child := parent.With("Namespace", "default")
	child.Info("child")
	parent.Info("parent")
	lines := decodeLines(t, &buf)
	require.Len(t, lines, 2)
	assert.Equal(t, "default", lines[0]["Namespace"])
	assert.NotContains(t, lines[1], "Namespace")
	assert.Same(t, parent, parent.WithCallerSkip(1))
}

func TestNewLoggerOptions(t *testing.T) {
	var buf bytes.Buffer
	zl, err := NewLogger(LogOptions{Level: "warn", Format: "json", Out: &buf})
	require.NoError(t, err)
	zl.Info().Msg("no")
	zl.Warn().Msg("yes")
	lines := decodeLines(t, &buf)
	require.Len(t, lines, 1)
	assert.Equal(t, "yes", lines[0]["message"])

	buf.Reset()
	zl, err = NewLogger(LogOptions{Format: "console", Out: &buf})
	require.NoError(t, err)
	zl.Info().Str("node", "n1").Msg("hello")
	assert.Contains(t, buf.String(), "hello")
	assert.Contains(t, buf.String(), "node=n1")
	assert.NotContains(t, buf.String(), "\x1b[", "no colour codes when not writing to a terminal")

	_, err = NewLogger(LogOptions{Level: "loud"})
	assert.ErrorContains(t, err, "--log-level")
	_, err = NewLogger(LogOptions{Format: "xml"})
	assert.ErrorContains(t, err, "--log-format")
}
