package checkpoint

import (
	"context"
	"os"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/internal/syncbuf"
)

// flipByte corrupts one byte of a file in place.
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	b := make([]byte, 1)
	_, err = f.ReadAt(b, off)
	require.NoError(t, err)
	b[0] ^= 0x01
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
}

func TestRestoreFallsBackPastACorruptCheckpoint(t *testing.T) {
	var logs syncbuf.Buffer
	opts := smallOptions(t.TempDir(), zerolog.New(&logs))
	e := openEngine(t, opts)
	for step := int64(1); step <= 3; step++ {
		saveWait(t, e, step, testShard(step, 250_000), plan1)
	}
	flipByte(t, slotOf(t, e, 3), 123_457)

	_, _, err := e.Read(context.Background(), 3)
	require.ErrorIs(t, err, ErrCorrupt)

	shard, m, err := e.Restore(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(2), m.Step)
	requireShardEqual(t, testShard(2, 250_000), shard)
	out := logs.String()
	assert.Contains(t, out, `"level":"warn"`)
	assert.Contains(t, out, "corrupt")
	assert.Contains(t, out, `"corrupt_step":3`)
	assert.Contains(t, out, `"fallback_step":2`)
}

func TestLoadSnapshotFallsBackPastACorruptStep(t *testing.T) {
	root := t.TempDir()
	opts := smallOptions(RankDir(root, 0), zerolog.Nop())
	e := openEngine(t, opts)
	for step := int64(1); step <= 3; step++ {
		saveWait(t, e, step, testShard(step, 250_000), plan1)
	}
	flipByte(t, slotOf(t, e, 3), 10)

	var logs syncbuf.Buffer
	src := LocalRoot(root, zerolog.Nop())
	snap, err := LoadSnapshot(context.Background(), src, -1, zerolog.New(&logs))
	require.NoError(t, err)
	assert.Equal(t, int64(2), snap.Step)
	want := testShard(2, 250_000)
	for _, tn := range want.Tensors {
		assert.Equal(t, tn.Data, snap.Tensors[tn.Name].Data, tn.Name)
	}
	out := logs.String()
	assert.Contains(t, out, "corrupt")
	assert.Contains(t, out, `"fallback_step":2`)

	_, err = LoadSnapshot(context.Background(), src, 3, zerolog.Nop())
	require.ErrorIs(t, err, ErrCorrupt)
}
