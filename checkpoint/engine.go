package checkpoint

import (
	"fmt"
	"os"
	"sort"
	"sync"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/internal/closing"
	"github.com/schooner-ml/schooner/internal/defaults"
)

// Defaults for Options, chosen for a node-local NVMe or cloud SSD: 64 MiB chunks written by four
// goroutines keep the device queue full with O_DIRECT, and 1 GiB of staging lets a trainer hand
// over a checkpoint of that size without waiting for the disk.
const (
	DefaultMaxInFlight   = 3
	DefaultWriters       = 4
	DefaultChunkSize     = 64 << 20
	DefaultStagingBytes  = 1 << 30
	DefaultKeepCommitted = 2
)

// Options configures one rank's engine.
type Options struct {
	Dir           string // the rank's own directory, created if missing
	Rank          int
	MaxInFlight   int   // checkpoints being persisted at once; default 3
	Writers       int   // writer goroutines; default 4
	ChunkSize     int64 // default 64 MiB (rounded up to 4096)
	StagingBytes  int64 // bounded staging pool; default 1 GiB, at least Writers chunks
	KeepCommitted int   // committed checkpoints kept on disk (latest + fallbacks); default 2
	// DirectIO writes data with O_DIRECT where the file system supports it (a log line says when
	// it falls back). Recommended: it skips the page cache copy and makes the final fdatasync
	// cheap; the zero value keeps buffered writes for file systems where O_DIRECT misbehaves.
	DirectIO bool
	Logger   zerolog.Logger
	// OnCommit is called in commit order after a commit is durable, for checkpoints that became
	// the latest (a superseded older checkpoint is not reported). It runs on the commit path and
	// must not block long: an uploader should queue the work.
	OnCommit func(ShardMeta)
}

// withDefaults fills zero fields and checks the rest.
func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		return o, fmt.Errorf("checkpoint engine needs a directory")
	}
	if o.Rank < 0 {
		return o, fmt.Errorf("rank %d must not be negative", o.Rank)
	}
	defaults.Positive(&o.MaxInFlight, DefaultMaxInFlight)
	defaults.Positive(&o.Writers, DefaultWriters)
	defaults.Positive(&o.ChunkSize, DefaultChunkSize)
	o.ChunkSize = alignUp(o.ChunkSize)
	defaults.Positive(&o.StagingBytes, DefaultStagingBytes)
	if minimum := int64(o.Writers) * o.ChunkSize; o.StagingBytes < minimum {
		o.StagingBytes = minimum
	}
	o.StagingBytes = o.StagingBytes / o.ChunkSize * o.ChunkSize
	defaults.Positive(&o.KeepCommitted, DefaultKeepCommitted)
	return o, nil
}

// Engine is one rank's local checkpoint engine (see the package documentation for the design).
// Its methods are safe for concurrent use.
type Engine struct {
	opts    Options
	log     zerolog.Logger
	unlock  func() error // releases the directory lock
	staging *stagingPool
	jobs    chan chunkJob
	writers sync.WaitGroup
	sem     chan struct{} // one token per checkpoint in flight
	hooks   testHooks
	copiers int // goroutines copying one Save's chunks into staging

	mu        sync.Mutex
	closed    bool
	inflight  sync.WaitGroup // Save calls and checkpoints not yet finished
	slots     []*slot
	nextSeq   uint64
	latest    ShardMeta
	hasLatest bool

	commitMu     sync.Mutex // orders pointer writes and OnCommit calls
	ptrs         *pointerFiles
	committedSeq uint64 // seq in the pointer
}

// testHooks lets tests in this package stall the pipeline at chosen points.
type testHooks struct {
	beforeChunkWrite func(seq uint64, chunk int)
}

// Latest is the last acknowledged commit: the checkpoint the pointer names. It never goes
// backwards, even when an older checkpoint finishes after a newer one.
func (e *Engine) Latest() (ShardMeta, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.latest, e.hasLatest
}

// Committed lists the committed checkpoints still on disk, newest (highest seq) first: the
// latest and its fallbacks, plus an older one until its slot is reused.
func (e *Engine) Committed() []ShardMeta {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []ShardMeta
	for _, s := range e.committedLocked() {
		out = append(out, s.m)
	}
	return out
}

// committedLocked is the committed slots, newest first. e.mu is held.
func (e *Engine) committedLocked() []*slot {
	var out []*slot
	for _, s := range e.slots {
		if s.state == slotCommitted {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].m.Seq > out[j].m.Seq })
	return out
}

// Close waits for the checkpoints in flight to commit (or fail), stops the writers and closes
// the files. Pending results stay readable; ShardReaders already handed out keep working.
func (e *Engine) Close() error {
	if !closing.Begin(&e.mu, &e.closed) {
		return nil
	}
	e.mu.Unlock()
	e.inflight.Wait()
	close(e.jobs)
	e.writers.Wait()
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	e.mu.Lock()
	for _, s := range e.slots {
		keep(s.close())
	}
	e.mu.Unlock()
	keep(e.ptrs.close())
	keep(e.staging.release())
	keep(e.unlock())
	if first != nil {
		return fmt.Errorf("closing checkpoint engine in %s: %w", e.opts.Dir, first)
	}
	e.log.Debug().Msg("checkpoint engine closed")
	return nil
}

// ensureDir creates the rank directory.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating checkpoint directory %s: %w", dir, err)
	}
	return nil
}
