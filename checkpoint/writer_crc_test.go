package checkpoint

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCRCCombineMatchesWholeChecksum(t *testing.T) {
	data := patternBytes(42, 1<<20+333)
	for _, cut := range []int{0, 1, 7, 4096, 65536, 1 << 20, len(data)} {
		a, b := data[:cut], data[cut:]
		assert.Equal(t, CRC32C(data), crcCombine(CRC32C(a), CRC32C(b), int64(len(b))), "cut at %d", cut)
	}
}

func TestCombineChunkCRCs(t *testing.T) {
	data := patternBytes(9, 300_000)
	var chunks []ChunkMeta
	for off := 0; off < len(data); off += 65536 {
		end := min(off+65536, len(data))
		chunks = append(chunks, ChunkMeta{Offset: int64(off), Length: int64(end - off), CRC32C: CRC32C(data[off:end])})
	}
	assert.Equal(t, CRC32C(data), combineChunkCRCs(chunks))
	assert.Equal(t, uint32(0), combineChunkCRCs(nil), "CRC of no data")
}
