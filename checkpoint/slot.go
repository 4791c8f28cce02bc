package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
)

// slotState is where a slot is in its life cycle.
type slotState int

const (
	slotFree      slotState = iota // holds nothing the engine reports
	slotWriting                    // owned by one in-flight checkpoint
	slotCommitted                  // holds a committed checkpoint
)

// slot is one preallocated data file and its metadata file. A slot holds at most one checkpoint;
// the engine rotates checkpoints through MaxInFlight+KeepCommitted of them.
type slot struct {
	idx      int
	dataPath string
	metaPath string
	data     *os.File // chunk writes, O_DIRECT when enabled and supported
	meta     *os.File
	direct   bool
	capacity int64 // bytes allocated to the data file

	// Written only by the goroutine that owns the slot (Open, or the checkpoint writing it) and
	// read under Engine.mu after ownership passed through it.
	metaValid bool // the metadata on disk may still describe a checkpoint: invalidate before reuse

	// Guarded by Engine.mu.
	state   slotState
	m       ShardMeta // when committed
	metaCRC uint32
	pins    int // ShardReaders and reads holding it
}

// openSlot opens (creating) slot i's files in dir.
func openSlot(dir string, i int, direct bool) (*slot, error) {
	s := &slot{idx: i, dataPath: filepath.Join(dir, slotDataName(i)), metaPath: filepath.Join(dir, slotMetaName(i))}
	var err error
	if s.data, s.direct, err = openData(s.dataPath, direct); err != nil {
		return nil, fmt.Errorf("opening slot %d: %w", i, err)
	}
	if s.meta, err = os.OpenFile(s.metaPath, os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		s.data.Close()
		return nil, fmt.Errorf("opening slot %d metadata: %w", i, err)
	}
	st, err := s.data.Stat()
	if err != nil {
		s.close()
		return nil, fmt.Errorf("inspecting slot %d: %w", i, err)
	}
	s.capacity = st.Size()
	return s, nil
}

// invalidate destroys the metadata header and syncs it, so that from now on — whatever happens
// to the data file — the slot never reads as holding a checkpoint.
func (s *slot) invalidate() error {
	if err := writeSyncedAt(s.meta, invalidSlotHeader, 0); err != nil {
		return fmt.Errorf("invalidating slot %d: %w", s.idx, err)
	}
	s.metaValid = false
	return nil
}

// reserve grows the data file to hold n bytes (rounded to the write alignment) and makes the new
// size durable. Slots only grow; a smaller checkpoint reuses the space.
func (s *slot) reserve(n int64) error {
	n = alignUp(n)
	if n <= s.capacity {
		return nil
	}
	if err := preallocate(s.data, n); err != nil {
		return fmt.Errorf("growing slot %d: %w", s.idx, err)
	}
	if err := s.data.Sync(); err != nil {
		return fmt.Errorf("syncing grown slot %d: %w", s.idx, err)
	}
	s.capacity = n
	return nil
}

// writeMeta writes a complete metadata record (header and JSON) and syncs it: the moment the
// checkpoint's data is described on disk. The data must already be durable.
func (s *slot) writeMeta(b []byte) error {
	if err := writeSyncedAt(s.meta, b, 0); err != nil {
		return fmt.Errorf("writing slot %d metadata: %w", s.idx, err)
	}
	s.metaValid = true
	return nil
}

// close closes both files.
func (s *slot) close() error {
	var first error
	for _, f := range []*os.File{s.data, s.meta} {
		if f == nil {
			continue
		}
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.data, s.meta = nil, nil
	return first
}
