package checkpoint

import (
	"fmt"
	"time"
)

// Enqueue queues a shard for upload and returns at once. Emergency shards go before all
// others. A queued (not yet started) non-emergency shard is dropped, with a log line and
// ErrSuperseded, when a newer step of the same rank is queued (or the same step as an
// emergency shard); a non-emergency shard older than one already queued for its rank, or a
// duplicate of a queued one, is dropped the same way. Emergency shards are never dropped.
func (u *Uploader) Enqueue(src ShardSource) {
	meta := src.Meta()
	var dropped []ShardMeta
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		u.log.Warn().Int64("step", meta.Step).Int("rank", meta.Rank).Msg("uploader closed; shard not uploaded")
		u.done(meta, false, ErrClosed)
		return
	}
	redundant := false
	keep := u.queue[:0]
	for _, it := range u.queue {
		q := it.meta
		switch {
		case q.Rank != meta.Rank:
		case !q.Emergency && (q.Step < meta.Step || (q.Step == meta.Step && meta.Emergency)):
			dropped = append(dropped, q)
			continue
		case q.Step > meta.Step && !meta.Emergency, q.Step == meta.Step:
			redundant = true
		}
		keep = append(keep, it)
	}
	u.queue = keep
	if redundant {
		dropped = append(dropped, meta)
	} else {
		u.queue = append(u.queue, &uploadItem{src: src, meta: meta})
		u.work.Signal()
	}
	u.mu.Unlock()
	for _, m := range dropped {
		u.log.Info().Int64("step", m.Step).Int("rank", m.Rank).Msg("dropping a queued upload superseded by a newer step")
		u.done(m, false, ErrSuperseded)
	}
}

// next blocks until a shard is queued, and takes the first emergency shard, else the oldest.
// It returns nil once the uploader is closed.
func (u *Uploader) next() *uploadItem {
	u.mu.Lock()
	defer u.mu.Unlock()
	for len(u.queue) == 0 && !u.closed {
		u.work.Wait()
	}
	if u.closed {
		return nil
	}
	pick := 0
	for i, it := range u.queue {
		if it.meta.Emergency {
			pick = i
			break
		}
	}
	it := u.queue[pick]
	u.queue = append(u.queue[:pick], u.queue[pick+1:]...)
	u.inflight++
	return it
}

// run is one upload goroutine.
func (u *Uploader) run() {
	defer u.wg.Done()
	for {
		it := u.next()
		if it == nil {
			return
		}
		committed, err := u.upload(it)
		u.mu.Lock()
		u.inflight--
		if err != nil {
			u.failed = append(u.failed, err)
		}
		u.signalIdleLocked()
		u.mu.Unlock()
		u.done(it.meta, committed, err)
	}
}

// upload opens the shard's data and puts it, retrying transient failures with backoff.
func (u *Uploader) upload(it *uploadItem) (bool, error) {
	m := it.meta
	log := u.log.With().Int64("step", m.Step).Int("rank", m.Rank).Bool("emergency", m.Emergency).Logger()
	data, release, err := it.src.OpenData()
	if err != nil {
		log.Error().Err(err).Msg("opening a shard to upload")
		return false, fmt.Errorf("opening step %d rank %d for upload: %w", m.Step, m.Rank, err)
	}
	defer func() {
		if release == nil {
			return
		}
		if err := release(); err != nil {
			log.Warn().Err(err).Msg("releasing an uploaded shard")
		}
	}()
	wait := u.opts.Backoff
	for attempt := 1; ; attempt++ {
		start := time.Now()
		committed, err := u.opts.Remote.PutShard(u.ctx, m, data)
		if err == nil {
			u.measure(m.Size, time.Since(start))
			log.Debug().Int64("bytes", m.Size).Dur("took", time.Since(start)).Bool("step_durable", committed).Msg("uploaded shard")
			return committed, nil
		}
		if u.ctx.Err() != nil || isPermanent(err) || attempt >= u.opts.MaxAttempts {
			log.Error().Err(err).Int("attempts", attempt).Msg("giving up uploading a shard")
			return false, err
		}
		log.Warn().Err(err).Int("attempt", attempt).Dur("retry_in", wait).Msg("uploading a shard failed; retrying")
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-u.ctx.Done():
			t.Stop()
			return false, fmt.Errorf("uploading step %d rank %d: %w", m.Step, m.Rank, u.ctx.Err())
		}
		wait = min(2*wait, maxBackoff)
	}
}

// measure folds one upload into the bandwidth estimate.
func (u *Uploader) measure(bytes int64, took time.Duration) {
	if bytes < bwMinBytes || took <= 0 {
		return
	}
	rate := float64(bytes) / took.Seconds()
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.bw == 0 {
		u.bw = rate
	} else {
		u.bw = bwAlpha*rate + (1-bwAlpha)*u.bw
	}
}
