package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProfileCalibrateWritesAProfileThatPredictsTheRuns(t *testing.T) {
	out := filepath.Join(t.TempDir(), "gpt-1.3b.json")
	text, err := execute(newProfileCommand(), "calibrate", "--model", "gpt-1.3b",
		"--cases", "../../bench/planaccuracy/data/h200-2026-12-02", "--profiles", "../../bench/gpu/results-2026-12-02/profiles", "--out", out)
	require.NoError(t, err, text)
	require.Contains(t, text, "3 measured runs")
	require.Contains(t, text, "compute times on H200-141: ×")
	require.FileExists(t, out)

	_, err = execute(newProfileCommand(), "calibrate", "--model", "gpt-9", "--cases", "../../bench/planaccuracy/data/h200-2026-12-02", "--out", out)
	require.ErrorContains(t, err, "no case in")
	_, err = execute(newProfileCommand(), "calibrate", "--model", "gpt-1.3b")
	require.ErrorContains(t, err, "--cases, --model and --out are required")
}
