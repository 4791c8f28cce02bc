package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// slotDataName and slotMetaName name slot i's files inside a rank directory.
func slotDataName(i int) string { return fmt.Sprintf("slot-%03d.data", i) }
func slotMetaName(i int) string { return fmt.Sprintf("slot-%03d.meta", i) }

// diskSlot is what a read-only scan found in one slot.
type diskSlot struct {
	idx     int
	valid   bool // metadata is complete and checksummed
	meta    ShardMeta
	metaCRC uint32
}

// diskState is a rank directory as found on disk, without opening anything for writing. Open
// and LocalRoot share it so both apply the same commit rule.
type diskState struct {
	ptr     pointerRecord
	ptrCopy int
	ptrOK   bool
	slots   []diskSlot // by index; slots with no files are absent
	damaged []damagedSlot
	maxSeq  uint64 // highest seq in the pointer or any valid metadata
}

// committed reports whether a slot holds a committed checkpoint: valid metadata whose seq is at
// most the pointer's. Metadata with a higher seq belongs to a checkpoint that was in flight.
func (d diskState) committed(s diskSlot) bool {
	return d.ptrOK && s.valid && s.meta.Seq <= d.ptr.Seq
}

// committedSlots lists committed slots, newest (highest seq) first.
func (d diskState) committedSlots() []diskSlot {
	var out []diskSlot
	for _, s := range d.slots {
		if d.committed(s) {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].meta.Seq > out[j].meta.Seq })
	return out
}

// scanDir reads the pointer copies and every slot's metadata in dir. A missing directory is an
// empty state.
func scanDir(dir string) (diskState, error) {
	var d diskState
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return d, fmt.Errorf("listing %s: %w", dir, err)
	}
	d.ptr, d.ptrCopy, d.ptrOK, err = readPointers(dir)
	if err != nil {
		return d, err
	}
	if d.ptrOK {
		d.maxSeq = d.ptr.Seq
	}
	for _, e := range entries {
		idx, ok := parseSlotMetaName(e.Name())
		if !ok {
			continue
		}
		s := diskSlot{idx: idx}
		m, crc, err := readSlotMeta(filepath.Join(dir, e.Name()))
		switch {
		case err == nil:
			s.valid, s.meta, s.metaCRC = true, m, crc
			if m.Seq > d.maxSeq {
				d.maxSeq = m.Seq
			}
		case !errors.Is(err, errNoSlotMeta):
			return d, err
		default:
			if dm, ok := findDamage(filepath.Join(dir, e.Name()), idx, d, err); ok {
				d.damaged = append(d.damaged, dm)
			}
		}
		d.slots = append(d.slots, s)
	}
	sort.Slice(d.slots, func(i, j int) bool { return d.slots[i].idx < d.slots[j].idx })
	return d, nil
}

// parseSlotMetaName returns i for "slot-<i>.meta".
func parseSlotMetaName(name string) (int, bool) {
	if !strings.HasPrefix(name, "slot-") || !strings.HasSuffix(name, ".meta") {
		return 0, false
	}
	i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "slot-"), ".meta"))
	if err != nil || i < 0 {
		return 0, false
	}
	return i, true
}
