package checkpoint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSlotMetaRoundTripAndInvalidate(t *testing.T) {
	dir := t.TempDir()
	s, err := openSlot(dir, 0, true)
	require.NoError(t, err)
	defer s.close()

	m := ShardMeta{Format: FormatVersion, Step: 5, Seq: 9, Plan: plan1, Size: 10,
		Tensors: []TensorMeta{{Name: "x", Layer: 0, DType: Uint8, Shape: []int64{10}, Length: 10}},
		Chunks:  []ChunkMeta{{Offset: 0, Length: 10, CRC32C: 1}}}
	b, crc, err := encodeSlotMeta(m)
	require.NoError(t, err)
	require.NoError(t, s.writeMeta(b))
	got, gotCRC, err := readSlotMeta(s.metaPath)
	require.NoError(t, err)
	assert.Equal(t, crc, gotCRC)
	assert.Equal(t, m.Step, got.Step)

	require.NoError(t, s.invalidate())
	_, _, err = readSlotMeta(s.metaPath)
	require.ErrorIs(t, err, errNoSlotMeta)

	// A torn rewrite (header of the new record over the old JSON) is not valid either.
	require.NoError(t, s.writeMeta(b))
	m.Step, m.Seq = 6, 10
	b2, _, err := encodeSlotMeta(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(s.metaPath, append(b2[:slotHeaderSize], b[slotHeaderSize:]...), 0o644))
	_, _, err = readSlotMeta(s.metaPath)
	require.ErrorIs(t, err, errNoSlotMeta)

	_, _, err = readSlotMeta(filepath.Join(dir, "missing.meta"))
	require.ErrorIs(t, err, errNoSlotMeta)
}

func TestSlotGrowsAligned(t *testing.T) {
	s, err := openSlot(t.TempDir(), 1, false)
	require.NoError(t, err)
	defer s.close()
	require.NoError(t, s.reserve(5000))
	assert.Equal(t, int64(8192), s.capacity)
	require.NoError(t, s.reserve(100))
	assert.Equal(t, int64(8192), s.capacity, "slots never shrink")
	st, err := os.Stat(s.dataPath)
	require.NoError(t, err)
	assert.Equal(t, int64(8192), st.Size())
}
