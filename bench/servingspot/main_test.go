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

// TestAnEarlierRunsBillIsSetBesideTheSimulatorsSplit reads a usage report as `schooner demo
// serve` leaves it and sums it by capacity beside the simulator's run of the same policy.
func TestAnEarlierRunsBillIsSetBesideTheSimulatorsSplit(t *testing.T) {
	dir := t.TempDir()
	lines := `{"instance":"i-1","job":"d","zone":"us-east-2b","instance_type":"p3.2xlarge","gpus":1,"capacity":"spot","end":"preempted","hours":1.5,"cost_usd":1.2}
{"instance":"i-2","job":"d","zone":"us-east-2b","instance_type":"p3.2xlarge","gpus":1,"capacity":"on-demand","end":"terminated","hours":0.5,"cost_usd":1.53}

{"instance":"i-3","job":"d","zone":"us-west-2a","instance_type":"p3.2xlarge","gpus":1,"capacity":"spot","end":"terminated","hours":0.5,"cost_usd":0.4}
`
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "spot-aware-report"), 0o755))
	require.NoError(t, os.WriteFile(usagePath(dir, "spot-aware"), []byte(lines), 0o644))
	var out bytes.Buffer
	require.NoError(t, run([]string{"-stack=false", "-starts", "2", "-window", "6h", "-stretch", "2h", "-bills", dir, "-out", t.TempDir()}, &out))
	assert.Contains(t, out.String(), "| spot-aware | stack (the market's bill) | 2 | 2.00 | $1.600 | 0.800 | 1 | 0.50 | $1.530 | $3.130 |")
	assert.Contains(t, out.String(), "| spot-aware | simulator | – |")
	assert.NotContains(t, out.String(), "| on-demand | stack", "no usage report for that policy: left out")

	require.NoError(t, os.WriteFile(usagePath(dir, "spot-aware"), []byte(lines+"{oops\n"), 0o644))
	err := run([]string{"-stack=false", "-starts", "2", "-window", "6h", "-stretch", "2h", "-bills", dir, "-out", t.TempDir()}, &out)
	assert.ErrorContains(t, err, "demo-serve-usage.jsonl:5")
}
