package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/internal/closing"
	"github.com/schooner-ml/schooner/internal/defaults"
)

// ErrSuperseded is the outcome of a queued shard dropped because a newer step of the same rank
// was queued: uploading it would only be pruned away.
var ErrSuperseded = errors.New("shard superseded by a newer step of the same rank")

// ShardSource is one committed shard waiting to be uploaded. The data is opened only when the
// upload starts (a local slot is pinned no longer than needed) and released when it ends.
type ShardSource interface {
	Meta() ShardMeta
	OpenData() (data io.ReaderAt, release func() error, err error)
}

// UploaderOptions configure an Uploader. Remote is required.
type UploaderOptions struct {
	Remote      *Remote
	Concurrency int // shards uploaded at once; default 2
	// MaxAttempts is how many times a shard's upload is tried before it is given up
	// (default 5). A retry resumes a multipart upload where it stopped.
	MaxAttempts int
	// Backoff is the wait before the first retry (default 1s); it doubles each time, up to
	// 30s.
	Backoff time.Duration
	// OnDone, if set, is called once per enqueued shard when it is finished with: uploaded
	// (err nil; committedStep says whether its step is now durable), given up, superseded
	// (ErrSuperseded) or dropped by Close (ErrClosed). It runs on an upload goroutine or in
	// Enqueue and must not block long.
	OnDone func(meta ShardMeta, committedStep bool, err error)
	Logger zerolog.Logger
}

// Uploader copies committed shards to the remote tier in the background: emergency shards
// first, a queued shard dropped once a newer step of its rank is queued, transient failures
// retried with backoff. It measures upload bandwidth so a node agent can tell whether an
// emergency checkpoint can reach the store before a preemption deadline.
type Uploader struct {
	opts   UploaderOptions
	log    zerolog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	work     *sync.Cond // signalled when an item is queued or the uploader closes
	queue    []*uploadItem
	inflight int
	closed   bool
	idle     chan struct{} // closed and replaced whenever the uploader becomes idle
	failed   []error       // give-ups since the last Flush
	bw       float64       // bytes/s, EWMA
}

// uploadItem is a queued shard.
type uploadItem struct {
	src  ShardSource
	meta ShardMeta
}

// Upload bandwidth is an exponentially weighted moving average over uploads of at least
// bwMinBytes (smaller ones measure latency, not bandwidth).
const (
	bwAlpha    = 0.3
	bwMinBytes = 64 << 10
	maxBackoff = 30 * time.Second
)

// NewUploader starts the upload goroutines; Close stops them.
func NewUploader(opts UploaderOptions) *Uploader {
	defaults.Positive(&opts.Concurrency, 2)
	defaults.Positive(&opts.MaxAttempts, 5)
	defaults.Positive(&opts.Backoff, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	u := &Uploader{opts: opts, ctx: ctx, cancel: cancel, idle: make(chan struct{}),
		log: opts.Logger.With().Str("component", "uploader").Logger()}
	u.work = sync.NewCond(&u.mu)
	for range opts.Concurrency {
		u.wg.Add(1)
		go u.run()
	}
	return u
}

// Pending is the number of shards queued or being uploaded.
func (u *Uploader) Pending() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.queue) + u.inflight
}

// Bandwidth is the measured upload rate in bytes per second, 0 before the first upload.
func (u *Uploader) Bandwidth() float64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bw
}

// Flush waits until nothing is queued or in flight, and returns the shards given up since the
// previous Flush, joined. ctx bounds the wait.
func (u *Uploader) Flush(ctx context.Context) error {
	for {
		u.mu.Lock()
		if len(u.queue) == 0 && u.inflight == 0 {
			err := errors.Join(u.failed...)
			u.failed = nil
			u.mu.Unlock()
			return err
		}
		idle := u.idle
		u.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("flushing uploads (%d pending): %w", u.Pending(), ctx.Err())
		}
	}
}

// Close drops the queued shards, interrupts uploads in flight (an interrupted multipart
// upload stays in the store and a later PutShard of the shard resumes it) and waits for the
// upload goroutines. Call Flush first to finish the work.
func (u *Uploader) Close() error {
	if !closing.Begin(&u.mu, &u.closed) {
		return nil
	}
	dropped := u.queue
	u.queue = nil
	u.work.Broadcast()
	u.mu.Unlock()
	u.cancel()
	for _, it := range dropped {
		u.log.Warn().Int64("step", it.meta.Step).Int("rank", it.meta.Rank).Msg("uploader closed; shard not uploaded")
		u.done(it.meta, false, ErrClosed)
	}
	u.wg.Wait()
	u.mu.Lock()
	u.signalIdleLocked()
	u.mu.Unlock()
	return nil
}

// done reports a shard's outcome.
func (u *Uploader) done(meta ShardMeta, committed bool, err error) {
	if u.opts.OnDone != nil {
		u.opts.OnDone(meta, committed, err)
	}
}

// signalIdleLocked wakes Flush callers when there is nothing left to do.
func (u *Uploader) signalIdleLocked() {
	if len(u.queue) == 0 && u.inflight == 0 {
		close(u.idle)
		u.idle = make(chan struct{})
	}
}

// isPermanent tells failures that no retry can fix: a shard the remote refuses, data that does
// not match its checksum, or an uploader shutting down.
func isPermanent(err error) bool {
	return errors.Is(err, errRemoteInvalid) || errors.Is(err, store.ErrChecksum) ||
		errors.Is(err, context.Canceled)
}
