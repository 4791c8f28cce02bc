package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// ReadShardMeta returns rank's newest committed metadata of step, without reading its data.
func (r *localRoot) ReadShardMeta(ctx context.Context, step int64, rank int) (ShardMeta, error) {
	if err := ctx.Err(); err != nil {
		return ShardMeta{}, fmt.Errorf("reading step %d rank %d metadata: %w", step, rank, err)
	}
	dir := RankDir(r.dir, rank)
	d, err := scanDir(dir)
	if err != nil {
		return ShardMeta{}, err
	}
	for _, s := range d.committedSlots() {
		if s.meta.Step == step {
			return s.meta, nil
		}
	}
	for _, dm := range d.damaged {
		if dm.step == step {
			return ShardMeta{}, fmt.Errorf("step %d rank %d: %s: %w", step, rank, dm.why, ErrCorrupt)
		}
	}
	return ShardMeta{}, fmt.Errorf("step %d rank %d in %s: %w", step, rank, dir, ErrNoCheckpoint)
}

// ReadShardInto reads the slot holding m (found again by its commit sequence) straight into
// dst, verifying every chunk. As in ReadShard, a live engine may reuse the slot under the
// read: only a slot whose metadata is unchanged afterwards vouches for what was read.
func (r *localRoot) ReadShardInto(ctx context.Context, m ShardMeta, dst [][]byte) error {
	p, err := newScatterPlan(m, dst)
	if err != nil {
		return err
	}
	dir := RankDir(r.dir, m.Rank)
	d, err := scanDir(dir)
	if err != nil {
		return err
	}
	for _, s := range d.committedSlots() {
		if s.meta.Step != m.Step || s.meta.Seq != m.Seq {
			continue
		}
		path := filepath.Join(dir, slotDataName(s.idx))
		err := readFileInto(ctx, p, path)
		if mm, crc, merr := readSlotMeta(filepath.Join(dir, slotMetaName(s.idx))); merr != nil || mm.Seq != s.meta.Seq || crc != s.metaCRC {
			return fmt.Errorf("step %d rank %d: slot %d was reused while being read: %w", m.Step, m.Rank, s.idx, ErrNoCheckpoint)
		}
		return err
	}
	return fmt.Errorf("step %d rank %d seq %d in %s is gone: %w", m.Step, m.Rank, m.Seq, dir, ErrNoCheckpoint)
}

// readFileInto reads p's shard from the data file at path.
func readFileInto(ctx context.Context, p *scatterPlan, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening step %d data: %w", p.m.Step, err)
	}
	defer f.Close()
	return p.readAt(ctx, f, path)
}
