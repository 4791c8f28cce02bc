package store_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint/store"
)

func TestDirContract(t *testing.T) {
	t.Parallel()
	d, err := store.NewDir(t.TempDir())
	require.NoError(t, err)
	testContract(t, d)
}

func TestDirLayoutAndCleanup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	d, err := store.NewDir(root)
	require.NoError(t, err)
	put(t, d, "step-000000000001/rank-00000.data", []byte("abc"))
	b, err := os.ReadFile(filepath.Join(root, "step-000000000001", "rank-00000.data"))
	require.NoError(t, err)
	assert.Equal(t, []byte("abc"), b, "keys are plain files, readable without schooner")

	// A half-written file is not an object.
	require.NoError(t, os.WriteFile(filepath.Join(root, "step-000000000001", ".schooner-tmp-x"), []byte("partial"), 0o600))
	infos, err := d.List(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"step-000000000001/rank-00000.data"}, keys(infos))

	// A rejected put leaves no temp file behind.
	err = d.Put(ctx, "step-000000000001/x", bytes.NewReader([]byte("x")), 1, 0)
	require.ErrorIs(t, err, store.ErrChecksum)
	entries, err := os.ReadDir(filepath.Join(root, "step-000000000001"))
	require.NoError(t, err)
	assert.Len(t, entries, 2, "the data file and the planted partial file only")

	require.NoError(t, os.Remove(filepath.Join(root, "step-000000000001", ".schooner-tmp-x")))
	require.NoError(t, d.Delete(ctx, "step-000000000001/rank-00000.data"))
	_, err = os.Stat(filepath.Join(root, "step-000000000001"))
	assert.True(t, os.IsNotExist(err), "emptied directories are removed")
	_, err = os.Stat(root)
	assert.NoError(t, err, "the root stays")

	err = d.Put(ctx, "short", bytes.NewReader([]byte("ab")), 3, 0)
	assert.ErrorContains(t, err, "data ends after 2 of 3 bytes")

	_, err = store.NewDir("relative/dir")
	assert.ErrorContains(t, err, "absolute")
}
