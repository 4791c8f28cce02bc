package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckShmPathAcceptsOnlyProtocolFilesInTheDirectory(t *testing.T) {
	dir := "/dev/shm"
	assert.NoError(t, checkShmPath(dir, "/dev/shm/schooner-ckpt-save-1-ab"))
	assert.Error(t, checkShmPath(dir, "/dev/shm/other"))
	assert.Error(t, checkShmPath(dir, "/dev/shm/sub/schooner-ckpt-x"))
	assert.Error(t, checkShmPath(dir, "/dev/shm/../etc/schooner-ckpt-x"))
	assert.Error(t, checkShmPath(dir, "schooner-ckpt-x"))
	assert.Error(t, checkShmPath(dir, "/etc/passwd"))
}

func TestMappingSeesTheOtherSidesWritesAndNoticesReplacement(t *testing.T) {
	dir := t.TempDir()
	w, err := createShm(dir, "save", 4096)
	require.NoError(t, err)
	defer func() { _ = w.unmap() }()
	r, err := openShm(w.path, false)
	require.NoError(t, err)
	defer func() { _ = r.unmap() }()
	copy(w.data, "hello")
	assert.Equal(t, "hello", string(r.data[:5]), "both map the same pages")
	assert.True(t, r.sameFile(w.path))

	require.NoError(t, os.Remove(w.path))
	f, err := os.Create(w.path)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(4096))
	require.NoError(t, f.Close())
	assert.False(t, r.sameFile(w.path), "a new file under the old name is not the mapped one")

	empty, err := createShm(dir, "load", 0)
	require.NoError(t, err)
	assert.Zero(t, empty.size())
	assert.NoError(t, empty.unmap())
	assert.True(t, strings.HasPrefix(filepath.Base(empty.path), shmPrefix+"load-"))
}

// TestDisconnectRemovesTheClientsFiles: a trainer that dies without closing leaves nothing in
// the shared-memory directory.
func TestDisconnectRemovesTheClientsFiles(t *testing.T) {
	ctx := context.Background()
	r := startAgent(t, testOptions(t))
	c := r.dial(t, 0, plan1())
	_, err := c.Save(ctx, 1, testShard(0, 1, 4096), nil, false)
	require.NoError(t, err)
	_, err = c.Wait(ctx, 1, DurableLocal)
	require.NoError(t, err)
	_, err = c.call(ctx, Request{Op: OpLoad, Step: 1}) // a restore the client never reads
	require.NoError(t, err)
	entries, err := os.ReadDir(r.opts.ShmDir)
	require.NoError(t, err)
	require.NotEmpty(t, entries)

	require.NoError(t, c.nc.Close()) // the process dies: no Close, no unlink
	eventually(t, 10*time.Second, func() bool {
		entries, err := os.ReadDir(r.opts.ShmDir)
		return err == nil && len(entries) == 0
	}, "the agent to remove the connection's files")
}
