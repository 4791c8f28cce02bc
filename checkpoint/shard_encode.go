package checkpoint

import (
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"time"

	"github.com/schooner-ml/schooner/internal/defaults"
)

// EncodeShard lays out a shard's data and metadata exactly as the engine does for a local slot
// (tensors contiguous in the order given, chunks of chunkSize with a CRC-32C each, the whole
// data's CRC-32C), so a rank without a local disk can PutShard straight to the remote tier and
// any reader treats the result like an engine's. chunkSize <= 0 means DefaultChunkSize.
// Created is now; the caller may set Seq, Emergency or Created on the result.
func EncodeShard(step int64, shard Shard, plan PlanInfo, extra map[string]string, chunkSize int64) (ShardMeta, []byte, error) {
	if step < 0 {
		return ShardMeta{}, nil, fmt.Errorf("encoding step %d: step must not be negative", step)
	}
	if err := plan.Validate(); err != nil {
		return ShardMeta{}, nil, fmt.Errorf("encoding step %d: %w", step, err)
	}
	if err := shard.Validate(); err != nil {
		return ShardMeta{}, nil, fmt.Errorf("encoding step %d: %w", step, err)
	}
	defaults.Positive(&chunkSize, DefaultChunkSize)
	m := ShardMeta{
		Format:  FormatVersion,
		Step:    step,
		Rank:    shard.Rank,
		Plan:    plan,
		Created: time.Now().UTC(),
		Extra:   maps.Clone(extra),
		Size:    shard.Size(),
	}
	m.Plan.Stages = slices.Clone(plan.Stages)
	data := make([]byte, 0, m.Size)
	for _, t := range shard.Tensors {
		m.Tensors = append(m.Tensors, TensorMeta{Name: t.Name, Layer: t.Layer, DType: t.DType,
			Shape: slices.Clone(t.Shape), Offset: int64(len(data)), Length: int64(len(t.Data))})
		data = append(data, t.Data...)
	}
	for at := int64(0); at < m.Size; at += chunkSize {
		end := min(at+chunkSize, m.Size)
		m.Chunks = append(m.Chunks, ChunkMeta{Offset: at, Length: end - at, CRC32C: CRC32C(data[at:end])})
	}
	m.CRC32C = CRC32C(data)
	return m, data, nil
}

// DecodeShard checks data against its metadata (size, every chunk's CRC-32C, the whole CRC,
// each tensor's size against its type and shape) and cuts it into tensors, which share data's
// memory. Any mismatch wraps ErrCorrupt.
func DecodeShard(meta ShardMeta, data []byte) (Shard, error) {
	if err := meta.Validate(); err != nil {
		return Shard{}, fmt.Errorf("step %d rank %d: invalid metadata: %v: %w", meta.Step, meta.Rank, err, ErrCorrupt)
	}
	if int64(len(data)) != meta.Size {
		return Shard{}, fmt.Errorf("step %d rank %d: %d data bytes, metadata says %d: %w", meta.Step, meta.Rank, len(data), meta.Size, ErrCorrupt)
	}
	var whole uint32
	for i, c := range meta.Chunks {
		part := data[c.Offset : c.Offset+c.Length]
		if got := CRC32C(part); got != c.CRC32C {
			return Shard{}, fmt.Errorf("step %d rank %d chunk %d at offset %d: crc32c %08x, want %08x: %w",
				meta.Step, meta.Rank, i, c.Offset, got, c.CRC32C, ErrCorrupt)
		}
		whole = crc32.Update(whole, Castagnoli, part)
	}
	if whole != meta.CRC32C {
		return Shard{}, fmt.Errorf("step %d rank %d: data crc32c %08x, metadata says %08x: %w", meta.Step, meta.Rank, whole, meta.CRC32C, ErrCorrupt)
	}
	s := Shard{Rank: meta.Rank, Tensors: make([]Tensor, len(meta.Tensors))}
	for i, tm := range meta.Tensors {
		end := tm.Offset + tm.Length
		t := Tensor{Name: tm.Name, Layer: tm.Layer, DType: tm.DType, Shape: slices.Clone(tm.Shape), Data: data[tm.Offset:end:end]}
		if err := t.Validate(); err != nil {
			return Shard{}, fmt.Errorf("step %d rank %d: %v: %w", meta.Step, meta.Rank, err, ErrCorrupt)
		}
		s.Tensors[i] = t
	}
	return s, nil
}
