package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// readShardData reads the data of the checkpoint described by m from the slot data file at path
// and verifies every chunk's CRC-32C and the whole-data CRC, several chunks at a time. A
// mismatch or a short file is an error wrapping ErrCorrupt that names the step and the first
// such chunk.
func readShardData(ctx context.Context, path string, m ShardMeta) (Shard, error) {
	buf := make([]byte, m.Size)
	if err := readFileInto(ctx, wholeDataPlan(m, buf), path); err != nil {
		return Shard{}, err
	}
	return shardFromData(m, buf), nil
}

// shardFromData cuts buf (the whole verified data) into the tensors m describes. Each tensor's
// slice has its capacity capped so appending to one can never overwrite the next.
func shardFromData(m ShardMeta, buf []byte) Shard {
	s := Shard{Rank: m.Rank, Tensors: make([]Tensor, len(m.Tensors))}
	for i, t := range m.Tensors {
		end := t.Offset + t.Length
		s.Tensors[i] = Tensor{Name: t.Name, Layer: t.Layer, DType: t.DType, Shape: slices.Clone(t.Shape),
			Data: buf[t.Offset:end:end]}
	}
	return s
}

// verifyShardData checks every chunk of the data at path against m, like readShardData, but
// reads through one chunk-sized buffer instead of holding the whole shard.
func verifyShardData(ctx context.Context, path string, m ShardMeta) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening step %d data: %w", m.Step, err)
	}
	defer f.Close()
	buf := make([]byte, longestChunk(m))
	for i, c := range m.Chunks {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("verifying step %d: %w", m.Step, err)
		}
		part := buf[:c.Length]
		if _, err := f.ReadAt(part, c.Offset); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("step %d rank %d chunk %d is cut short in %s: %w", m.Step, m.Rank, i, path, ErrCorrupt)
			}
			return fmt.Errorf("reading step %d chunk %d: %w", m.Step, i, err)
		}
		if got := CRC32C(part); got != c.CRC32C {
			return fmt.Errorf("step %d rank %d chunk %d at offset %d: crc32c %08x, want %08x: %w",
				m.Step, m.Rank, i, c.Offset, got, c.CRC32C, ErrCorrupt)
		}
	}
	if got := combineChunkCRCs(m.Chunks); got != m.CRC32C {
		return fmt.Errorf("step %d rank %d: chunk checksums combine to %08x, metadata says %08x: %w",
			m.Step, m.Rank, got, m.CRC32C, ErrCorrupt)
	}
	return nil
}
