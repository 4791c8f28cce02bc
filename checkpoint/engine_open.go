package checkpoint

import (
	"fmt"
	"runtime"

	"github.com/schooner-ml/schooner/checkpoint/store"
)

// Open starts the engine for opts.Dir, recovering what a previous engine left there: the valid
// pointer copy with the highest seq is the commit point; slots whose metadata is valid and whose
// seq is at most the pointer's are committed; metadata of checkpoints that were still in flight
// (seq above the pointer) is invalidated so it can never be mistaken for a commit later.
func Open(opts Options) (*Engine, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := ensureDir(opts.Dir); err != nil {
		return nil, err
	}
	unlock, err := lockDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	disk, err := scanDir(opts.Dir)
	if err != nil {
		unlock()
		return nil, fmt.Errorf("recovering %s: %w", opts.Dir, err)
	}
	e := &Engine{
		opts:    opts,
		unlock:  unlock,
		log:     opts.Logger.With().Str("component", "checkpoint").Int("rank", opts.Rank).Logger(),
		sem:     make(chan struct{}, opts.MaxInFlight),
		copiers: min(runtime.GOMAXPROCS(0), maxCopiers),
		nextSeq: disk.maxSeq + 1,
	}
	if disk.ptrOK {
		e.committedSeq = disk.ptr.Seq
	}
	if err := e.openSlots(disk); err != nil {
		e.closeFiles()
		return nil, err
	}
	if e.ptrs, err = openPointerFiles(opts.Dir, disk.ptrCopy, disk.ptrOK); err != nil {
		e.closeFiles()
		return nil, err
	}
	if err := store.SyncDir(opts.Dir); err != nil {
		e.closeFiles()
		return nil, err
	}
	e.pickLatest(disk)
	buffers := int(opts.StagingBytes / opts.ChunkSize)
	if e.staging, err = newStagingPool(opts.ChunkSize, buffers); err != nil {
		e.closeFiles()
		return nil, err
	}
	e.jobs = make(chan chunkJob, buffers)
	for i := 0; i < opts.Writers; i++ {
		e.writers.Add(1)
		go e.writer()
	}
	ev := e.log.Info().Str("dir", absDir(opts.Dir)).Int("slots", len(e.slots)).Int("committed", len(e.committedLocked())).
		Bool("direct_io", e.directIO()).Int64("chunk_bytes", opts.ChunkSize).Int64("staging_bytes", opts.StagingBytes)
	if e.hasLatest {
		ev = ev.Int64("latest_step", e.latest.Step).Uint64("latest_seq", e.latest.Seq)
	}
	ev.Msg("checkpoint engine open")
	return e, nil
}

// openSlots opens every slot found on disk and creates the missing ones up to
// MaxInFlight+KeepCommitted, classifying each from the scan.
func (e *Engine) openSlots(disk diskState) error {
	n := e.opts.MaxInFlight + e.opts.KeepCommitted
	found := make(map[int]diskSlot, len(disk.slots))
	for _, ds := range disk.slots {
		found[ds.idx] = ds
		if ds.idx+1 > n {
			n = ds.idx + 1
		}
	}
	warned := false
	for i := 0; i < n; i++ {
		s, err := openSlot(e.opts.Dir, i, e.opts.DirectIO)
		if err != nil {
			return err
		}
		e.slots = append(e.slots, s)
		if e.opts.DirectIO && directIOSupported && !s.direct && !warned {
			warned = true
			e.log.Warn().Str("dir", e.opts.Dir).Msg("file system refuses O_DIRECT; writing checkpoints through the page cache")
		}
		ds, ok := found[i]
		switch {
		case ok && disk.committed(ds):
			s.state, s.m, s.metaCRC, s.metaValid = slotCommitted, ds.meta, ds.metaCRC, true
		case ok && ds.valid:
			e.log.Info().Int64("step", ds.meta.Step).Uint64("seq", ds.meta.Seq).Int("slot", i).
				Msg("discarding a checkpoint that was still in flight when the engine stopped")
			if err := s.invalidate(); err != nil {
				return err
			}
		default:
			// Empty, torn or invalidated: nothing to report, nothing to invalidate.
		}
	}
	return nil
}

// pickLatest sets Latest from the pointer's slot, or from the newest committed slot if the
// pointer's slot no longer matches (its metadata was damaged after the commit).
func (e *Engine) pickLatest(disk diskState) {
	committed := e.committedLocked()
	for _, s := range committed {
		if disk.ptrOK && uint32(s.idx) == disk.ptr.Slot && s.m.Seq == disk.ptr.Seq && s.metaCRC == disk.ptr.MetaCRC {
			e.latest, e.hasLatest = s.m, true
			return
		}
	}
	if len(committed) > 0 {
		e.latest, e.hasLatest = committed[0].m, true
		e.log.Warn().Int64("step", e.latest.Step).Msg("the pointer's slot does not match its record; using the newest committed slot as latest")
	}
}

// directIO reports whether data writes bypass the page cache.
func (e *Engine) directIO() bool {
	return len(e.slots) > 0 && e.slots[0].direct
}

// closeFiles closes whatever Open managed to open before failing, and unlocks the directory.
func (e *Engine) closeFiles() {
	for _, s := range e.slots {
		s.close()
	}
	if e.ptrs != nil {
		e.ptrs.close()
	}
	e.unlock()
}
