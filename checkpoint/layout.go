package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"slices"
)

// Layout is one step's metadata from every rank, read before any data: enough to choose what
// to restore and where each tensor goes, so the data can then be read straight into place
// (ReadInto) instead of into a Snapshot and copied from there.
type Layout struct {
	// Snapshot holds the step's plan, every rank's metadata and every tensor by name, with nil
	// Data: it selects (Layers, ForStage) exactly as a loaded snapshot does.
	Snapshot *Snapshot
	owner    map[string]int // name → the first rank's index in Snapshot.Shards
}

// LayoutStep reads the metadata of ranks 0..World-1 of step (World from rank 0's plan), checks
// each tensor's size against its type and shape, and that a name two ranks hold agrees in layer,
// type and shape (its bytes are compared by ReadInto). Errors wrap ErrCorrupt and
// ErrNoCheckpoint as ReadShard's do, so a restore falls back past the step as it would.
func LayoutStep(ctx context.Context, src Source, step int64) (*Layout, error) {
	m0, err := src.ReadShardMeta(ctx, step, 0)
	if err != nil {
		return nil, fmt.Errorf("loading step %d: %w", step, err)
	}
	l := &Layout{Snapshot: &Snapshot{Step: step, Plan: m0.Plan, Tensors: make(map[string]Tensor)}, owner: make(map[string]int)}
	for rank := 0; rank < m0.Plan.World; rank++ {
		m := m0
		if rank > 0 {
			if m, err = src.ReadShardMeta(ctx, step, rank); err != nil {
				return nil, fmt.Errorf("loading step %d: %w", step, err)
			}
		}
		if err := l.add(m); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// add merges one rank's metadata.
func (l *Layout) add(m ShardMeta) error {
	snap := l.Snapshot
	for _, tm := range m.Tensors {
		t := Tensor{Name: tm.Name, Layer: tm.Layer, DType: tm.DType, Shape: slices.Clone(tm.Shape)}
		if want := t.NumElements() * int64(t.DType.Size()); t.DType.Size() == 0 || want != tm.Length || tm.Name == "" {
			return fmt.Errorf("step %d rank %d: tensor %q: shape %v of %q does not fit its %d bytes: %w",
				m.Step, m.Rank, tm.Name, tm.Shape, tm.DType, tm.Length, ErrCorrupt)
		}
		prev, dup := snap.Tensors[tm.Name]
		if dup && l.owner[tm.Name] == len(snap.Shards) {
			return fmt.Errorf("step %d rank %d: tensor %s appears twice: %w", m.Step, m.Rank, tm.Name, ErrCorrupt)
		}
		if !dup {
			snap.Tensors[tm.Name], l.owner[tm.Name] = t, len(snap.Shards)
			continue
		}
		if prev.Layer != t.Layer || prev.DType != t.DType || !slices.Equal(prev.Shape, t.Shape) {
			return fmt.Errorf("loading step %d: tensor %s differs between rank %d and rank %d",
				m.Step, tm.Name, snap.Shards[l.owner[tm.Name]].Rank, m.Rank)
		}
	}
	snap.Shards = append(snap.Shards, m)
	return nil
}

// ReadInto reads every rank's shard of the step from src, verifying every chunk, with the bytes
// of each tensor named in dst landing in dst[name] (of the tensor's length). Every rank is read
// whole, wanted or not, so a step restores only if all of it verifies, as with LoadSnapshot:
// every rank of a job resumes from the same step. Unwanted bytes pass through one chunk of
// scratch per reader and are not kept. A name several ranks hold is read from each and must
// match byte for byte. Errors wrap ErrCorrupt or ErrNoCheckpoint as ReadShard's do.
func (l *Layout) ReadInto(ctx context.Context, src Source, dst map[string][]byte) error {
	snap := l.Snapshot
	// Later copies of a name a rank before holds: read aside and compared once all is read.
	type dupCopy struct {
		name string
		rank int
		data []byte
	}
	var dups []dupCopy
	for si, m := range snap.Shards {
		into := make([][]byte, len(m.Tensors))
		for i, tm := range m.Tensors {
			switch {
			case l.owner[tm.Name] == si:
				into[i] = dst[tm.Name]
			default:
				into[i] = make([]byte, tm.Length)
				dups = append(dups, dupCopy{tm.Name, m.Rank, into[i]})
			}
		}
		if err := src.ReadShardInto(ctx, m, into); err != nil {
			return fmt.Errorf("loading step %d: %w", snap.Step, err)
		}
	}
	if len(dups) == 0 {
		return nil
	}
	// A duplicated name's first copy is compared from where it landed, or read again when the
	// restore did not want it (rare: replicas normally leave such names to one rank), each
	// owning rank's shard once for all of its names.
	var unwanted []string
	for _, d := range dups {
		if _, ok := dst[d.name]; !ok {
			unwanted = append(unwanted, d.name)
		}
	}
	firsts, err := l.readFirsts(ctx, src, unwanted)
	if err != nil {
		return err
	}
	for _, d := range dups {
		first, ok := dst[d.name]
		if !ok {
			first = firsts[d.name]
		}
		if !bytes.Equal(first, d.data) {
			return fmt.Errorf("loading step %d: tensor %s differs between rank %d and rank %d",
				snap.Step, d.name, snap.Shards[l.owner[d.name]].Rank, d.rank)
		}
	}
	return nil
}

// readFirsts reads the first copy of each of names, reading (and verifying) each owning rank's
// shard once however many of the names it holds.
func (l *Layout) readFirsts(ctx context.Context, src Source, names []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(names))
	byOwner := make(map[int]bool)
	for _, name := range names {
		out[name] = nil
		byOwner[l.owner[name]] = true
	}
	for si, m := range l.Snapshot.Shards {
		if !byOwner[si] {
			continue
		}
		into := make([][]byte, len(m.Tensors))
		for i, tm := range m.Tensors {
			if _, want := out[tm.Name]; want && l.owner[tm.Name] == si {
				into[i] = make([]byte, tm.Length)
				out[tm.Name] = into[i]
			}
		}
		if err := src.ReadShardInto(ctx, m, into); err != nil {
			return nil, fmt.Errorf("loading step %d: %w", l.Snapshot.Step, err)
		}
	}
	return out, nil
}

// Tensor is the metadata of the first rank's copy of name, so a caller can size its place.
func (l *Layout) Tensor(name string) (TensorMeta, bool) {
	si, ok := l.owner[name]
	if !ok {
		return TensorMeta{}, false
	}
	for _, tm := range l.Snapshot.Shards[si].Tensors {
		if tm.Name == name {
			return tm, true
		}
	}
	return TensorMeta{}, false
}
