package checkpoint

import (
	"fmt"
	"time"

	"github.com/schooner-ml/schooner/checkpoint/store"
)

// persist drives one checkpoint from Save to commit: prepare the slot, wait for the writers,
// make the data durable, write the metadata, then commit through the pointer.
func (e *Engine) persist(ck *inflight) {
	if err := e.prepare(ck); err != nil {
		ck.fail(err)
	}
	close(ck.ready)
	ck.chunks.Wait()
	ck.phases.written = time.Since(ck.started)
	superseded, err := false, ck.failed()
	if err == nil {
		superseded, err = e.commit(ck)
	}
	meta := ck.meta
	if err != nil && ck.slot != nil {
		e.mu.Lock()
		ck.slot.state = slotFree
		e.mu.Unlock()
	}
	if err != nil {
		e.log.Error().Err(err).Int64("step", meta.Step).Uint64("seq", ck.seq).Msg("checkpoint failed")
	} else {
		elapsed := time.Since(ck.started)
		ph := ck.phases
		e.log.Debug().Int64("step", meta.Step).Uint64("seq", ck.seq).Int("slot", ck.slot.idx).Int64("bytes", meta.Size).
			Dur("elapsed", elapsed).Float64("mb_per_s", float64(meta.Size)/1e6/elapsed.Seconds()).
			Dur("staged_at", ph.staged).Dur("written_at", ph.written).Dur("synced_at", ph.synced).Dur("meta_at", ph.meta).
			Bool("superseded", superseded).Msg("checkpoint committed")
	}
	<-e.sem
	ck.pending.complete(meta, superseded, err)
	e.inflight.Done()
}

// prepare readies the slot for new data: destroy its old metadata first (so a crash while the
// data is being overwritten leaves a slot that reads as empty), then grow it if needed.
func (e *Engine) prepare(ck *inflight) error {
	if ck.slot == nil {
		return fmt.Errorf("no slot available for step %d", ck.meta.Step)
	}
	if ck.newSlot {
		if err := store.SyncDir(e.opts.Dir); err != nil {
			return err
		}
	}
	if ck.invalidate {
		if err := ck.slot.invalidate(); err != nil {
			return err
		}
	}
	return ck.slot.reserve(ck.meta.Size)
}

// commit makes the checkpoint durable and, unless a newer one is already committed, moves the
// pointer to it. Order: data fdatasync, metadata write+fdatasync, pointer write+fdatasync.
func (e *Engine) commit(ck *inflight) (superseded bool, err error) {
	s := ck.slot
	if ck.meta.Size > 0 {
		if err := fdatasync(s.data); err != nil {
			return false, fmt.Errorf("making step %d data durable: %w", ck.meta.Step, err)
		}
	}
	ck.phases.synced = time.Since(ck.started)
	ck.meta.CRC32C = combineChunkCRCs(ck.meta.Chunks)
	rec, crc, err := encodeSlotMeta(ck.meta)
	if err != nil {
		return false, err
	}
	if err := s.writeMeta(rec); err != nil {
		return false, err
	}
	ck.phases.meta = time.Since(ck.started)

	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	superseded = ck.seq <= e.committedSeq
	if !superseded {
		ptr := pointerRecord{Seq: ck.seq, Step: ck.meta.Step, Slot: uint32(s.idx), MetaCRC: crc}
		if err := e.ptrs.write(ptr); err != nil {
			return false, err
		}
		e.committedSeq = ck.seq
	}
	e.mu.Lock()
	s.state, s.m, s.metaCRC = slotCommitted, ck.meta, crc
	if !superseded {
		e.latest, e.hasLatest = ck.meta, true
	}
	e.mu.Unlock()
	if !superseded && e.opts.OnCommit != nil {
		e.opts.OnCommit(ck.meta)
	}
	return superseded, nil
}
