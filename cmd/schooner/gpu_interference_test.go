package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gi "github.com/schooner-ml/schooner/gpu/interference"
	"github.com/schooner-ml/schooner/gpu/interference/fake"
	"github.com/schooner-ml/schooner/interference"
)

func TestGPUInterferenceShowPrintsTheTableAndDrawsThePlot(t *testing.T) {
	dir := t.TempDir()
	req := interference.StudyRequest{Pairs: []interference.Pair{{LC: "decode-chain", BE: "gemm"}},
		Mechanisms: []interference.Mechanism{{Kind: interference.Streams}, {Kind: interference.MPS, Setting: 50}, {Kind: interference.MIG}}}
	st, err := gi.RunStudy(context.Background(), fake.New(), req, nil)
	require.NoError(t, err)
	path := filepath.Join(dir, "study.json")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, st.Encode(f))
	require.NoError(t, f.Close())

	svg := filepath.Join(dir, "front.svg")
	out, err := executeFresh(newGPUInterferenceCommand, "show", path, "--svg", svg)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, "SIMULATED"), "a model's study is marked: %s", out)
	assert.Contains(t, out, "decode-chain + gemm")
	assert.Contains(t, out, "mps-50")
	assert.Contains(t, out, "mig: MIG is disabled on this GPU")
	assert.Contains(t, out, "plot: "+svg)
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.Contains(t, string(b), "<svg")

	out, err = executeFresh(newGPUInterferenceCommand, "show", path, "--json")
	require.NoError(t, err)
	assert.Contains(t, out, `"be_throughput_fraction"`)

	require.NoError(t, os.WriteFile(path, []byte(`{"version":7,"gpu":{"model":"x"}}`), 0o644))
	_, err = executeFresh(newGPUInterferenceCommand, "show", path)
	require.ErrorContains(t, err, "version 7: this build reads versions 1 to 3")
	_, err = executeFresh(newGPUInterferenceCommand, "show", filepath.Join(dir, "none.json"))
	require.ErrorContains(t, err, "no such file")
}
