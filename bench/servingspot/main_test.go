package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheSimulatorAloneWritesItsTables runs the trace-replay part only (the full stack needs
// python3 with torch and minutes): a table per policy, on a stretch and over starts, and the
// raw JSON beside it.
func TestTheSimulatorAloneWritesItsTables(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, run([]string{"-stack=false", "-starts", "4", "-window", "6h", "-stretch", "2h", "-out", dir}, &out))
	for _, p := range []string{"| spot-aware |", "| restart-only |", "| on-demand | $", "| on-demand | 1.00 / 1.00 |"} {
		assert.Contains(t, out.String(), p)
	}
	b, err := os.ReadFile(filepath.Join(dir, "simulated.json"))
	require.NoError(t, err)
	var got struct {
		Summaries []simSummary `json:"summaries"`
	}
	require.NoError(t, json.Unmarshal(b, &got))
	require.Len(t, got.Summaries, 3)
	for _, s := range got.Summaries {
		assert.Len(t, s.Runs, 4, s.Policy)
	}
	assert.NoFileExists(t, filepath.Join(dir, "comparison.json"), "no stack run")

	assert.Error(t, run([]string{"-stack=false", "-window", "100000h", "-out", dir}, &out), "a window longer than the traces")
}
