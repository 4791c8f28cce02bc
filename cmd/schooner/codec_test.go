package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/workers/codec"
)

func TestCodecKeygenPrintsAKeyLineAKeyFileAccepts(t *testing.T) {
	out, err := execute(newCodecCommand(), "keygen", "--id", "2026-12")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, "2026-12 "), out)
	path := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(path, []byte(out), 0o600))
	keys, err := codec.LoadKeyFile(path)
	require.NoError(t, err)
	assert.Equal(t, "2026-12", keys.Current())
}

func TestCodecServeRefusesAnOpenAddressWithoutAToken(t *testing.T) {
	assert.NoError(t, checkCodecListen("127.0.0.1:8081", ""))
	assert.NoError(t, checkCodecListen("localhost:8081", ""))
	assert.NoError(t, checkCodecListen("[::1]:8081", ""))
	assert.ErrorContains(t, checkCodecListen("0.0.0.0:8081", ""), "set --token")
	assert.NoError(t, checkCodecListen("0.0.0.0:8081", "secret"))
	_, err := execute(newCodecCommand(), "serve", "--key-file", filepath.Join(t.TempDir(), "missing"))
	assert.ErrorContains(t, err, "codec key file")
}
