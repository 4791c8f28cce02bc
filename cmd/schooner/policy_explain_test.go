package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// explain tells one run: the demo job at 1.2x from a start with spot (8 spot GPUs, no purchase)
// and from the trace's first tick, where it buys on-demand and says why; the summary compares
// the run with the best on-demand plan. Steps where nothing happened are left out unless --all.
func TestPolicyExplainTellsOneRunStepByStep(t *testing.T) {
	out, err := execute(newPolicyCommand(), "explain", "--iterations", "600", "--deadline", "1.2x", "--start", "53h45m")
	require.NoError(t, err, out)
	assert.Contains(t, out, "schooner-deadline: 600 iterations on at most 8 GPUs, from 53h45m0s into bundled aws-08-27-2023")
	assert.Contains(t, out, "8 spot + 0 on-demand")
	assert.Contains(t, out, "met the deadline in 42m0s")
	assert.Contains(t, out, "0.36x the best on-demand plan (6 GPUs")
	brief := strings.Count(out, "\n")

	all, err := execute(newPolicyCommand(), "explain", "--iterations", "600", "--deadline", "1.2x", "--start", "53h45m", "--all")
	require.NoError(t, err, all)
	assert.Greater(t, strings.Count(all, "\n"), brief, "--all prints the steps where nothing changed too")

	first, err := execute(newPolicyCommand(), "explain", "--iterations", "600", "--deadline", "1.2x")
	require.NoError(t, err, first)
	assert.Contains(t, first, "on-demand where spot is short", "the purchase's reason")
	assert.Contains(t, first, "met the deadline")
}

func TestPolicyExplainRefusesAStartPastTheTraceAndAnUnknownPolicy(t *testing.T) {
	_, err := execute(newPolicyCommand(), "explain", "--iterations", "600", "--start", "9000h")
	assert.ErrorContains(t, err, "--start 9000h0m0s: the trace is")
	_, err = execute(newPolicyCommand(), "explain", "--iterations", "600", "--policy", "cheapest")
	assert.ErrorContains(t, err, `unknown policy "cheapest"`)
}
