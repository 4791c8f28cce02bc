package checkpoint_test

import (
	"context"
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
)

// rtPlan is a three-rank plan: a two-stage pipeline, data parallel on the first stage.
var rtPlan = checkpoint.PlanInfo{World: 3, PP: 2, DP: 2, TP: 1,
	Stages: []checkpoint.StageLayers{{First: 0, End: 2}, {First: 2, End: 4}}}

// rtFloats is a float32 tensor of n values derived from seed.
func rtFloats(name string, layer, n int, seed float32) checkpoint.Tensor {
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(seed+float32(i)/7))
	}
	return checkpoint.Tensor{Name: name, Layer: layer, DType: checkpoint.Float32, Shape: []int64{int64(n)}, Data: b}
}

// rtShard is what rank saves at step: its own layers plus, on rank 0, the step counter.
func rtShard(rank int, step int64, n int) checkpoint.Shard {
	s := checkpoint.Shard{Rank: rank, Tensors: []checkpoint.Tensor{
		rtFloats("layers."+string(rune('a'+rank))+".w", rank, n, float32(step)+float32(rank)),
		rtFloats("layers."+string(rune('a'+rank))+".b", rank, 3, float32(step)),
	}}
	if rank == 0 {
		counter := make([]byte, 8)
		binary.LittleEndian.PutUint64(counter, uint64(step))
		s.Tensors = append(s.Tensors, checkpoint.Tensor{Name: "step", Layer: checkpoint.NoLayer, DType: checkpoint.Int64, Shape: []int64{}, Data: counter})
	}
	return s
}

func TestEncodeShardLayout(t *testing.T) {
	t.Parallel()
	shard := rtShard(0, 7, 10) // 40 + 12 + 8 bytes
	meta, data, err := checkpoint.EncodeShard(7, shard, rtPlan, map[string]string{"iteration": "7"}, 16)
	require.NoError(t, err)
	require.NoError(t, meta.Validate())
	assert.Equal(t, checkpoint.FormatVersion, meta.Format)
	assert.Equal(t, int64(7), meta.Step)
	assert.Equal(t, int64(60), meta.Size)
	assert.Len(t, data, 60)
	assert.Equal(t, "7", meta.Extra["iteration"])
	assert.False(t, meta.Created.IsZero())

	var off int64
	for i, tm := range meta.Tensors {
		assert.Equal(t, shard.Tensors[i].Name, tm.Name, "tensors keep the order given")
		assert.Equal(t, off, tm.Offset, "tensors are contiguous")
		assert.Equal(t, shard.Tensors[i].Data, data[tm.Offset:tm.Offset+tm.Length])
		off += tm.Length
	}
	require.Len(t, meta.Chunks, 4)
	for i, c := range meta.Chunks {
		assert.Equal(t, int64(16*i), c.Offset)
		assert.Equal(t, checkpoint.CRC32C(data[c.Offset:c.Offset+c.Length]), c.CRC32C)
	}
	assert.Equal(t, int64(12), meta.Chunks[3].Length)
	assert.Equal(t, checkpoint.CRC32C(data), meta.CRC32C)

	back, err := checkpoint.DecodeShard(meta, data)
	require.NoError(t, err)
	assert.Equal(t, shard, back)

	_, _, err = checkpoint.EncodeShard(1, checkpoint.Shard{Tensors: []checkpoint.Tensor{{Name: "x", DType: checkpoint.Float32, Shape: []int64{2}, Data: []byte{1}}}}, rtPlan, nil, 0)
	assert.ErrorContains(t, err, "needs 8 bytes")
	_, _, err = checkpoint.EncodeShard(1, shard, checkpoint.PlanInfo{}, nil, 0)
	assert.ErrorContains(t, err, "world size")
}

func TestEncodeShardEmpty(t *testing.T) {
	t.Parallel()
	meta, data, err := checkpoint.EncodeShard(3, checkpoint.Shard{Rank: 1}, rtPlan, nil, 0)
	require.NoError(t, err)
	assert.Empty(t, data)
	assert.Empty(t, meta.Chunks)
	require.NoError(t, meta.Validate())
	s, err := checkpoint.DecodeShard(meta, data)
	require.NoError(t, err)
	assert.Equal(t, 1, s.Rank)
}

func TestEncodeShardDecodeDetectsCorruption(t *testing.T) {
	t.Parallel()
	meta, data, err := checkpoint.EncodeShard(7, rtShard(1, 7, 100), rtPlan, nil, 64)
	require.NoError(t, err)

	flipped := append([]byte(nil), data...)
	flipped[100] ^= 1
	_, err = checkpoint.DecodeShard(meta, flipped)
	require.ErrorIs(t, err, checkpoint.ErrCorrupt)
	assert.ErrorContains(t, err, "chunk 1")

	_, err = checkpoint.DecodeShard(meta, data[:len(data)-1])
	assert.ErrorIs(t, err, checkpoint.ErrCorrupt)

	bad := meta
	bad.CRC32C++
	_, err = checkpoint.DecodeShard(bad, data)
	assert.ErrorIs(t, err, checkpoint.ErrCorrupt)

	bad = meta
	bad.Tensors = append([]checkpoint.TensorMeta(nil), meta.Tensors...)
	bad.Tensors[0].Shape = []int64{99}
	_, err = checkpoint.DecodeShard(bad, data)
	assert.ErrorIs(t, err, checkpoint.ErrCorrupt)
}

// The engine and EncodeShard must lay out data the same way: a shard uploaded from a local
// slot and one encoded in memory are indistinguishable to readers.
func TestEncodeShardMatchesEngine(t *testing.T) {
	t.Parallel()
	e, err := checkpoint.Open(checkpoint.Options{Dir: t.TempDir(), Rank: 2, ChunkSize: 4096, StagingBytes: 4 * 4096, Writers: 2})
	require.NoError(t, err)
	defer e.Close()
	shard := rtShard(2, 40, 3000) // 12 KiB: several chunks
	p, err := e.Save(context.Background(), checkpoint.SaveRequest{Step: 40, Shard: shard, Plan: rtPlan, Extra: map[string]string{"k": "v"}})
	require.NoError(t, err)
	fromEngine, err := p.Wait(context.Background())
	require.NoError(t, err)

	encoded, _, err := checkpoint.EncodeShard(40, shard, rtPlan, map[string]string{"k": "v"}, 4096)
	require.NoError(t, err)
	assert.Equal(t, fromEngine.Tensors, encoded.Tensors)
	assert.Equal(t, fromEngine.Chunks, encoded.Chunks)
	assert.Equal(t, fromEngine.CRC32C, encoded.CRC32C)
	assert.Equal(t, fromEngine.Size, encoded.Size)
}
