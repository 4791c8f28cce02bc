package sim

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBundledTracesEqualSharedOnes(t *testing.T) {
	bundled, err := BundledTraces()
	require.NoError(t, err)
	require.Len(t, bundled, 3)
	shared, _, err := LoadSkyPilotDir(filepath.Join(traceDir, "16-node", BundledTraceSet))
	require.NoError(t, err)
	for key, tr := range shared {
		b, ok := bundled[key]
		require.True(t, ok, "bundled set lacks %v", key)
		assert.Equal(t, tr.Steps, b.Steps, "%v", key)
		assert.Equal(t, tr.Gap, b.Gap)
	}
}
