package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/profiles"
)

const planA100 = `{"model": "OPT-350", "global_batch": 64, "micro_batch": 2, "stages": [
	{"first_layer": 0, "last_layer": 12, "replicas": [{"gpu": "A100-40", "tp": 1, "zone": "us-central1-a", "region": "us-central1", "gpus_per_node": 2}]},
	{"first_layer": 13, "last_layer": 25, "replicas": [{"gpu": "A100-40", "tp": 1, "zone": "us-central1-a", "region": "us-central1", "gpus_per_node": 2}]}]}`

// writeCase writes a case whose measurements are the simulator's own prediction scaled.
func writeCase(t *testing.T, dir, name, plan string, timeScale, memScale float64) {
	t.Helper()
	p, err := planner.ParsePlan([]byte(plan))
	require.NoError(t, err)
	m, err := profiles.Load(p.Model, "")
	require.NoError(t, err)
	n, err := profiles.LoadNetwork("")
	require.NoError(t, err)
	est, err := planner.Simulate(p, m, n)
	require.NoError(t, err)
	c := map[string]any{"name": name, "plan": json.RawMessage(plan), "measured": map[string]any{
		"iter_seconds": est.IterTime * timeScale, "peak_mem_bytes": []float64{est.Stages[0].PeakMemBytes * memScale, est.Stages[1].PeakMemBytes * memScale}}}
	b, err := json.Marshal(c)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644))
}

func TestErrorsAgainstMeasuredPlans(t *testing.T) {
	dir := t.TempDir()
	writeCase(t, dir, "exact", planA100, 1, 1)
	writeCase(t, dir, "slow", planA100, 1.25, 0.8)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "unknown-model.json"), []byte(`{"plan": {"model": "GPT-9", "global_batch": 8, "micro_batch": 1,
		"stages": [{"first_layer": 0, "last_layer": 3, "replicas": [{"gpu": "A100-40", "tp": 1, "zone": "z", "region": "r", "gpus_per_node": 1}]}]},
		"measured": {"iter_seconds": 1}}`), 0o644))

	rows, err := Evaluate(dir, "")
	require.NoError(t, err)
	require.Len(t, rows, 3)
	assert.Equal(t, "exact", rows[0].Case)
	assert.InDelta(t, 0, rows[0].TimeErr, 1e-12)
	assert.InDelta(t, 1/1.25-1, rows[1].TimeErr, 1e-12)
	assert.InDelta(t, 1/0.8-1, rows[1].MemErrs[0], 1e-12)
	assert.Contains(t, rows[2].Error, "GPT-9")

	s := Summarize(rows)
	assert.Equal(t, 3, s.Cases)
	assert.Equal(t, 1, s.Failed)
	assert.InDelta(t, 10, s.TimeMedian, 1e-9, "median of 0% and 20%")

	var out bytes.Buffer
	require.NoError(t, run([]string{"-dir", dir, "-markdown"}, &out))
	assert.Contains(t, out.String(), "| slow | A100-40 |")
	assert.Contains(t, out.String(), "not simulated")
	assert.Contains(t, out.String(), "time not met (cases not simulated)")
}

func TestRefusesBadCases(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"no-time.json":   `{"plan": ` + planA100 + `, "measured": {}}`,
		"mem-count.json": `{"plan": ` + planA100 + `, "measured": {"iter_seconds": 1, "peak_mem_bytes": [1]}}`,
		"broken.json":    `{"plan": `,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	rows, err := Evaluate(dir, "")
	require.NoError(t, err)
	want := map[string]string{"broken.json": "not a case file", "mem-count.json": "1 entries for 2 stages", "no-time.json": "iter_seconds must be positive"}
	for _, r := range rows {
		assert.Contains(t, r.Error, want[r.Case], r.Case)
	}
	_, err = Evaluate(t.TempDir(), "")
	require.ErrorContains(t, err, "no case files")
}
