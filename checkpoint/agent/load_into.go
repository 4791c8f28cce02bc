package agent

import (
	"context"
	"fmt"

	"github.com/schooner-ml/schooner/checkpoint"
)

// chooser picks a load's tensors from a step's layout (a snapshot without data).
type chooser func(snap *checkpoint.Snapshot) (selection, error)

// selectError carries a selection's own error out of a restore unchanged, and, since it does
// not unwrap, keeps checkpoint.TryDurable from falling back past a step over it: a request the
// newest step cannot satisfy is the caller's mistake, not a damaged step.
type selectError struct{ err error }

func (e selectError) Error() string { return e.err.Error() }

// restoreFrom restores step (negative: the newest durable step that verifies, falling back past
// corrupt or incomplete ones) from src into a fresh shared-memory file.
func (a *Agent) restoreFrom(ctx context.Context, src checkpoint.Source, step int64, choose chooser) (restored, error) {
	var out restored
	err := a.w.tryDurable(ctx, src, step, a.log, func(st int64) error {
		l, err := checkpoint.LayoutStep(ctx, src, st)
		if err != nil {
			return err
		}
		sel, err := choose(l.Snapshot)
		if err != nil {
			return selectError{err}
		}
		path, size, index, err := readRestore(ctx, a.opts.ShmDir, src, l, sel.tensors)
		if err != nil {
			return err
		}
		out = restored{step: st, plan: l.Snapshot.Plan, from: src.String(), path: path, size: size, index: index, extra: sel.extra}
		return nil
	})
	return out, err
}

// readRestore lays the selected tensors out in a new shared-memory file, 64-byte aligned, and
// reads them from src straight into it (checkpoint.Layout.ReadInto), so the restore's bytes are
// written once, where the client maps them, and verified there. It returns the file's path, size
// and index; when the read fails, the file is removed.
func readRestore(ctx context.Context, dir string, src checkpoint.Source, l *checkpoint.Layout, tensors []checkpoint.Tensor) (string, int64, []checkpoint.TensorMeta, error) {
	index := make([]checkpoint.TensorMeta, len(tensors))
	var size int64
	for i, t := range tensors {
		tm, ok := l.Tensor(t.Name)
		if !ok {
			return "", 0, nil, fmt.Errorf("step %d: tensor %s is missing from the restore", l.Snapshot.Step, t.Name)
		}
		size = alignUp(size, loadAlign)
		index[i] = checkpoint.TensorMeta{Name: t.Name, Layer: t.Layer, DType: t.DType, Shape: t.Shape, Offset: size, Length: tm.Length}
		size += tm.Length
	}
	m, err := createShm(dir, "load", size)
	if err != nil {
		return "", 0, nil, fmt.Errorf("writing restore: %w", err)
	}
	dst := make(map[string][]byte, len(index))
	for _, tm := range index {
		dst[tm.Name] = m.data[tm.Offset : tm.Offset+tm.Length : tm.Offset+tm.Length]
	}
	err = l.ReadInto(ctx, src, dst)
	if uerr := m.unmap(); err == nil {
		err = uerr
	}
	if err != nil {
		_ = removeShm(m.path)
		return "", 0, nil, err
	}
	return m.path, size, index, nil
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }
