package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/schooner-ml/schooner/checkpoint/store"
)

// ReadShard downloads and verifies one rank's shard of a step: the metadata (against the
// step's COMMIT, when there is one), then every chunk's and the whole data's CRC-32C. A
// mismatch wraps ErrCorrupt; a missing object wraps ErrNoCheckpoint.
func (r *Remote) ReadShard(ctx context.Context, step int64, rank int) (Shard, ShardMeta, error) {
	meta, err := r.readMeta(ctx, step, rank)
	if err != nil {
		return Shard{}, ShardMeta{}, err
	}
	buf := make([]byte, meta.Size)
	if err := r.readData(ctx, meta, func(rc io.Reader) error {
		_, err := io.ReadFull(rc, buf)
		return err
	}); err != nil {
		return Shard{}, ShardMeta{}, err
	}
	shard, err := DecodeShard(meta, buf)
	if err != nil {
		return Shard{}, ShardMeta{}, fmt.Errorf("in %s: %w", r.Store, err)
	}
	return shard, meta, nil
}

// readMeta downloads, decodes and cross-checks one rank's metadata of a step.
func (r *Remote) readMeta(ctx context.Context, step int64, rank int) (ShardMeta, error) {
	mb, err := r.getSmall(ctx, remoteMetaKey(step, rank))
	if errors.Is(err, store.ErrNotFound) {
		return ShardMeta{}, fmt.Errorf("step %d rank %d metadata in %s: %w", step, rank, r.Store, ErrNoCheckpoint)
	}
	if err != nil {
		return ShardMeta{}, fmt.Errorf("reading step %d rank %d metadata: %w", step, rank, err)
	}
	meta, err := DecodeShardMeta(mb)
	if err != nil {
		return ShardMeta{}, fmt.Errorf("step %d rank %d metadata in %s: %v: %w", step, rank, r.Store, err, ErrCorrupt)
	}
	if meta.Step != step || meta.Rank != rank {
		return ShardMeta{}, fmt.Errorf("step %d rank %d metadata in %s describes step %d rank %d: %w",
			step, rank, r.Store, meta.Step, meta.Rank, ErrCorrupt)
	}
	c, err := r.Commit(ctx, step)
	switch {
	case errors.Is(err, ErrNoCheckpoint): // not durable (yet): nothing to check against
	case err != nil:
		return ShardMeta{}, err
	case rank >= len(c.Ranks) || c.Ranks[rank].Rank != rank:
		return ShardMeta{}, fmt.Errorf("step %d commit in %s lists no rank %d: %w", step, r.Store, rank, ErrCorrupt)
	case c.Ranks[rank].MetaCRC32C != CRC32C(mb):
		return ShardMeta{}, fmt.Errorf("step %d rank %d metadata in %s changed after the commit (crc32c %08x, committed %08x): %w",
			step, rank, r.Store, CRC32C(mb), c.Ranks[rank].MetaCRC32C, ErrCorrupt)
	}
	return meta, nil
}

// ReadShardMeta downloads and cross-checks one rank's metadata of a step, without its data.
func (r *Remote) ReadShardMeta(ctx context.Context, step int64, rank int) (ShardMeta, error) {
	return r.readMeta(ctx, step, rank)
}

// ReadShardInto downloads the shard m describes straight into dst, verifying every chunk as
// it streams past and, as ReadShard does, the object's length and the store's own checksum.
func (r *Remote) ReadShardInto(ctx context.Context, m ShardMeta, dst [][]byte) error {
	p, err := newScatterPlan(m, dst)
	if err != nil {
		return err
	}
	return r.readData(ctx, m, func(rc io.Reader) error { return p.readStream(ctx, rc, r.Store.String()) })
}

// readData streams the data object of m's step and rank through read, which must consume
// exactly m.Size bytes, then reads on to the end: that finds an object longer than its
// metadata says and lets the store check the object's own checksum (the chunk checksums are
// the real test). A missing object wraps ErrNoCheckpoint; a short, long or store-corrupt one,
// or a read's own ErrCorrupt, wraps ErrCorrupt.
func (r *Remote) readData(ctx context.Context, m ShardMeta, read func(io.Reader) error) error {
	step, rank := m.Step, m.Rank
	rc, err := r.Store.Get(ctx, remoteDataKey(step, rank))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("step %d rank %d data in %s: %w", step, rank, r.Store, ErrNoCheckpoint)
	}
	if err != nil {
		return fmt.Errorf("reading step %d rank %d data: %w", step, rank, err)
	}
	defer rc.Close()
	if err := read(rc); err != nil {
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
			return fmt.Errorf("step %d rank %d data in %s is shorter than %d bytes: %w", step, rank, r.Store, m.Size, ErrCorrupt)
		case errors.Is(err, store.ErrChecksum):
			return fmt.Errorf("step %d rank %d data in %s: %w: %w", step, rank, r.Store, ErrCorrupt, err)
		case errors.Is(err, ErrCorrupt):
			return err
		}
		return fmt.Errorf("reading step %d rank %d data: %w", step, rank, err)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(rc, 1))
	switch {
	case n > 0:
		return fmt.Errorf("step %d rank %d data in %s is longer than %d bytes: %w", step, rank, r.Store, m.Size, ErrCorrupt)
	case errors.Is(err, store.ErrChecksum):
		return fmt.Errorf("step %d rank %d data in %s: %w: %w", step, rank, r.Store, ErrCorrupt, err)
	}
	return nil
}
