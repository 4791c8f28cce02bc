package stack

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The market replays the user's trace directory in place of the bundled traces.
func TestMarketReplaysTheTraceDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, data string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	write("us-west-2a_v100_1.json", `{"metadata": {"gap_seconds": 3600}, "data": [5, 0]}`)
	write("us-west-2a_k80_1.json", `{"metadata": {"gap_seconds": 3600}, "data": [1]}`)

	s := &Stack{opts: Options{Seed: 1, TimeScale: 1, TraceDir: dir, Logger: zerolog.Nop()}}
	require.NoError(t, s.startMarket())
	t.Cleanup(s.stopMarket)
	level, _, ok := s.Market.SpotCapacity("us-west-2a", "p3.2xlarge")
	require.True(t, ok)
	assert.Equal(t, 5, level, "the offering replays the user's trace, not the bundled one")
	require.Len(t, s.TraceSkipped, 1)
	assert.Contains(t, s.TraceSkipped[0], "us-west-2a_k80_1.json")

	bad := &Stack{opts: Options{TraceDir: filepath.Join(dir, "missing"), Logger: zerolog.Nop()}}
	require.Error(t, bad.startMarket())
}
