package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/colocation"
	"github.com/schooner-ml/schooner/gpu/colocate/fakegpu"
)

func TestColocateRunRefusesBadFlagsBeforeStartingAnything(t *testing.T) {
	for args, want := range map[*[]string]string{
		{"run", "--be", "true"}: "hp.command",
		{"run", "--hp", "true", "--be", "true", "--target", "0.9"}:                                                              "target_slowdown",
		{"run", "--hp", "true", "--be", "true", "--mps", "maybe"}:                                                               `mps "maybe"`,
		{"run", "--hp", "true", "--be", "true", "--force"}:                                                                      "give --node",
		{"run", "--hp", "true", "--be", "true", "--node", "n1"}:                                                                 "study: no interference results",
		{"run", "--hp", "true", "--be", "true", "--node", "n1", "--study", "/nonexistent.json", "--kinds", "decode-chain+gemm"}: "--study",
		{"run", "--hp", "true", "--be", "true", "--node", "n1", "--force", "--kinds", "decode-chain"}:                           "LC+BE",
	} {
		_, err := executeFresh(newColocateCommand, *args...)
		assert.ErrorContains(t, err, want, "%v", *args)
	}
}

// The local path end to end over the fake CUDA (no GPU): the result JSON is written.
func TestColocateRunHereWritesTheResult(t *testing.T) {
	fake, err := fakegpu.Build(context.Background(), t.TempDir())
	require.NoError(t, err)
	t.Setenv("LD_LIBRARY_PATH", fake.Dir)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	out := filepath.Join(t.TempDir(), "pair.json")
	_, err = executeFresh(newColocateCommand, "run", "--mps", "off", "--out", out,
		"--hp", fake.App+" runtime hp_gemm_kernel 5 10 132 >/dev/null", "--be", fake.App+" dlsym be_gemm_kernel 5 1 132 >/dev/null")
	require.NoError(t, err)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	var res colocation.Result
	require.NoError(t, json.Unmarshal(b, &res))
	assert.Zero(t, res.HPExit)
	assert.Equal(t, int64(5), res.HPKernels)
}

func TestColocateSimulateSaysItIsSimulated(t *testing.T) {
	out, err := executeFresh(newColocateCommand, "simulate", "--be-kernel", "100us", "--duration", "200ms")
	require.NoError(t, err)
	assert.Contains(t, out, "SIMULATED GPU (132 SMs")
	for _, m := range []string{"dedicated", "streams", "priority", "schooner"} {
		assert.Contains(t, out, m)
	}
}
