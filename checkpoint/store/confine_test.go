package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint/store"
)

func TestConfineRefusesStoresOutsideTheRoots(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "link")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "nothing"), filepath.Join(root, "dangling")))
	roots := []string{root}

	for _, ok := range []string{
		"file://" + root,
		"file://" + root + "/job-7/store",
		"file://" + root + "/a/../b",
		"s3://bucket/prefix",
	} {
		assert.NoError(t, store.Confine(ok, roots), ok)
	}
	for _, bad := range []string{
		"file:///etc",
		"file://" + root + "/../etc",
		"file://" + root + "/..",
		"file://" + root + "-sibling",
		"file://" + root + "/link",
		"file://" + root + "/link/deeper",
		"file://" + root + "/dangling/x",
	} {
		err := store.Confine(bad, roots)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), bad, "the error names the URL")
		if _, isConfine := err.(*store.ConfineError); isConfine {
			assert.Contains(t, err.Error(), root, "the error names the allowed roots")
		}
	}
	assert.Error(t, store.Confine("file://"+root, nil), "no roots, no file stores")
}

func TestConfinedOpenerCreatesNothingOutside(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	open := store.ConfinedOpener(nil, []string{root})
	_, err := open.Open(context.Background(), "file://"+outside+"/store")
	require.Error(t, err)
	assert.NoDirExists(t, filepath.Join(outside, "store"))
	st, err := open.Open(context.Background(), "file://"+root+"/store")
	require.NoError(t, err)
	assert.Equal(t, "file://"+root+"/store", st.String())
}

func TestDefaultRootsKeepTheExamplesWorking(t *testing.T) {
	roots := store.DefaultRoots("/data/node")
	for _, ok := range []string{
		"file:///var/lib/schooner/ckpt",                                // examples/command-trainer.yaml
		"file://" + filepath.Join(os.TempDir(), "schooner-demo/store"), // examples/demo.yaml
		"file:///data/node/store",
	} {
		assert.NoError(t, store.Confine(ok, roots), ok)
	}
	assert.Error(t, store.Confine("file:///etc", roots))
	assert.Error(t, store.Confine("file:///var/lib/schooner/../../../etc", roots))
}

func TestDirSweepRemovesOnlyStaleTempFiles(t *testing.T) {
	root := t.TempDir()
	d, err := store.NewDir(root)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "step-1"), 0o755))
	stale := filepath.Join(root, "step-1", ".schooner-tmp-rank-00000.data-1")
	fresh := filepath.Join(root, "step-1", ".schooner-tmp-rank-00001.data-2")
	obj := filepath.Join(root, "step-1", "rank-00000.meta")
	for _, p := range []string{stale, fresh, obj} {
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
	}
	old := time.Now().Add(-2 * time.Hour)
	require.NoError(t, os.Chtimes(stale, old, old))
	require.NoError(t, os.Chtimes(obj, old, old))
	n, err := d.Sweep(context.Background(), time.Hour)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.NoFileExists(t, stale)
	assert.FileExists(t, fresh)
	assert.FileExists(t, obj)
}
