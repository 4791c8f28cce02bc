package serving

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/internal/specfile"
)

// kv_swap_gib is a spec file's field: parsed, off when absent, and valid up to its bound.
func TestKVSwapIsASpecOption(t *testing.T) {
	s, err := ParseSpec([]byte("name: chat\nmodel: {name: tiny}\nstages: 4\nkv_swap_gib: 48\n"), specfile.FormatYAML)
	require.NoError(t, err)
	assert.Equal(t, 48.0, s.KVSwapGiB)
	require.NoError(t, s.WithDefaults().Validate())

	s.KVSwapGiB = MaxKVSwapGiB
	require.NoError(t, s.WithDefaults().Validate())

	s, err = ParseSpec([]byte("name: chat\nmodel: {name: tiny}\n"), specfile.FormatYAML)
	require.NoError(t, err)
	assert.Zero(t, s.WithDefaults().KVSwapGiB, "off unless asked for")
}
