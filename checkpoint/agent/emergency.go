package agent

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/schooner-ml/schooner/checkpoint"
)

// uploadTime estimates how long bytes take to upload at bandwidth bytes per second.
func uploadTime(bytes int64, bandwidth float64) time.Duration {
	if bandwidth <= 0 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(float64(bytes) / bandwidth * float64(time.Second))
}

// emergencyFits decides whether emergency shard m can be uploaded before the preemption
// deadline, counting the emergency shards of every rank queued ahead of it. When it cannot, it
// makes sure the rank's newest committed step goes out first instead, and says so in the log
// and in Status.
func (a *Agent) emergencyFits(r *rankState, m checkpoint.ShardMeta) bool {
	n := a.currentNotice()
	if n == nil {
		return true
	}
	bw := a.up.Bandwidth()
	measured := bw > 0
	if !measured {
		bw = a.opts.AssumedBandwidth
	}
	ahead := a.emergencyBytesQueued()
	need := uploadTime(ahead+m.Size, bw)
	left := n.Deadline.Sub(a.opts.Now())
	log := a.log.With().Int("rank", r.rank).Int64("step", m.Step).Int64("bytes", m.Size).Int64("bytes_ahead", ahead).
		Float64("bandwidth", bw).Bool("measured", measured).Dur("need", need).Dur("left", left).Logger()
	times := fmt.Sprintf("%s needed at %.1f MB/s, %s left", need.Round(time.Millisecond), bw/1e6, left.Round(time.Millisecond))
	if need <= left {
		a.decide(fmt.Sprintf("rank %d: uploading emergency step %d first (%s)", r.rank, m.Step, times))
		log.Info().Msg("uploading the emergency shard first")
		return true
	}
	r.mu.Lock()
	prev := r.previous
	if r.eng == nil {
		prev = r.latest // remote mode: the newest uploaded step, or a newer one still queued
		for _, q := range r.queued {
			if prev == nil || q.meta.Step > prev.Step {
				prev = &q.meta
			}
		}
	}
	var q *queuedShard
	var uploaded bool
	if prev != nil {
		q, uploaded = r.queued[prev.Step], prev.Step <= r.uploaded
	}
	r.skipped[m.Step] = fmt.Sprintf("it cannot reach the store before the preemption deadline (%s)", times)
	r.mu.Unlock()
	switch {
	case prev == nil:
		a.decide(fmt.Sprintf("rank %d: emergency step %d cannot reach the store before the deadline (%s) and no older step is committed", r.rank, m.Step, times))
		log.Warn().Msg("the emergency shard cannot be uploaded in time and no older step is committed")
	case uploaded || (q != nil && q.started):
		a.decide(fmt.Sprintf("rank %d: emergency step %d cannot reach the store before the deadline (%s); step %d is already uploaded or on its way", r.rank, m.Step, times, prev.Step))
		log.Warn().Int64("instead", prev.Step).Msg("the emergency shard cannot be uploaded in time; the newest committed step is already on its way")
	default:
		a.decide(fmt.Sprintf("rank %d: emergency step %d cannot reach the store before the deadline (%s); uploading step %d first instead", r.rank, m.Step, times, prev.Step))
		log.Warn().Int64("instead", prev.Step).Msg("the emergency shard cannot be uploaded in time; uploading the newest committed step first instead")
		a.promote(r, *prev, q)
	}
	return false
}

// promote re-queues a committed step as an emergency shard, so it goes before the others (the
// uploader drops its normal copy still queued).
func (a *Agent) promote(r *rankState, m checkpoint.ShardMeta, q *queuedShard) {
	m.Emergency = true
	switch {
	case q != nil && q.src != nil:
		a.enqueue(r, withMeta{uploadSource: q.src, meta: m})
	case r.eng != nil:
		a.enqueue(r, newSlotSource(r, r.eng, m))
	}
}

// emergencyBytesQueued is the size of the emergency shards handed to the uploader and not yet
// reported done.
func (a *Agent) emergencyBytesQueued() int64 {
	var n int64
	for _, r := range a.allRanks() {
		r.mu.Lock()
		for _, q := range r.queued {
			if q.meta.Emergency {
				n += q.meta.Size
			}
		}
		r.mu.Unlock()
	}
	return n
}

// decide records an emergency decision for Status.
func (a *Agent) decide(s string) {
	a.mu.Lock()
	a.decision = s
	a.mu.Unlock()
}

func errorsIsSuperseded(err error) bool { return errors.Is(err, checkpoint.ErrSuperseded) }
