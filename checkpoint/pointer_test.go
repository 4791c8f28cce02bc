package checkpoint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPointerRecordRoundTrip(t *testing.T) {
	p := pointerRecord{Seq: 77, Step: 1200, Slot: 3, MetaCRC: 0xdeadbeef}
	got, err := decodePointer(p.encode())
	require.NoError(t, err)
	assert.Equal(t, p, got)

	for i := 0; i < pointerSize; i++ {
		b := p.encode()
		b[i] ^= 0x10
		_, err := decodePointer(b)
		require.Error(t, err, "flipped byte %d", i)
	}
	_, err = decodePointer(p.encode()[:20])
	require.Error(t, err, "torn record")
}

func TestPointerCopiesAlternateAndSurviveATornWrite(t *testing.T) {
	dir := t.TempDir()
	pf, err := openPointerFiles(dir, 0, false)
	require.NoError(t, err)
	defer pf.close()
	for seq := uint64(1); seq <= 3; seq++ {
		require.NoError(t, pf.write(pointerRecord{Seq: seq, Step: int64(seq * 10)}))
	}
	rec, idx, ok, err := readPointers(dir)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(3), rec.Seq)

	// Tear the copy holding seq 3: the other copy (seq 2) is what a restart sees.
	torn := rec.encode()[:pointerSize/2]
	require.NoError(t, os.WriteFile(filepath.Join(dir, pointerNames[idx]), torn, 0o644))
	rec, idx2, ok, err := readPointers(dir)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(2), rec.Seq)
	assert.NotEqual(t, idx, idx2)
}
