package node

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/internal/defaults"
	"github.com/schooner-ml/schooner/training"
)

// progressReporter turns a trainer's many progress callbacks into heartbeats every
// HeartbeatEvery and progress signals every ProgressEvery, sooner when a checkpoint became
// durable, so the job hears of a new restore point at once.
type progressReporter struct {
	s   *Supervisor
	a   training.Assignment
	hb  Heartbeat
	log zerolog.Logger

	mu       sync.Mutex
	latest   training.Progress
	dirty    bool
	urgent   bool
	kick     chan struct{}
	lastSent time.Time
}

func newProgressReporter(s *Supervisor, a training.Assignment, hb Heartbeat, log zerolog.Logger) *progressReporter {
	return &progressReporter{s: s, a: a, hb: hb, log: log, kick: make(chan struct{}, 1),
		latest: training.Progress{Epoch: a.Epoch, Rank: a.Rank, InstanceID: a.InstanceID,
			Iteration: max(a.RestoreStep, 0), LastCheckpoint: a.RestoreStep}}
}

// update records a progress report; the trainer's loop and its commit watcher both call it,
// so it keeps the furthest iteration and checkpoint seen.
func (r *progressReporter) update(p training.Progress) {
	r.mu.Lock()
	if p.LastCheckpoint > r.latest.LastCheckpoint {
		r.latest.LastCheckpoint = p.LastCheckpoint
		r.urgent = true
	}
	r.latest.Iteration = max(r.latest.Iteration, p.Iteration)
	r.dirty = true
	urgent := r.urgent
	r.mu.Unlock()
	if urgent {
		r.wake()
	}
}

// committed signals a durable step to the job.
func (r *progressReporter) committed(ctx context.Context, c training.CheckpointCommitted) {
	r.update(training.Progress{Epoch: c.Epoch, Rank: c.Rank, InstanceID: r.a.InstanceID, LastCheckpoint: c.Step})
	if r.s.Reporter == nil {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	if err := r.s.Reporter.Committed(rctx, r.a.JobID, c); err != nil && ctx.Err() == nil {
		r.log.Warn().Err(err).Int64("step", c.Step).Msg("reporting a committed checkpoint to the job")
	}
}

func (r *progressReporter) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// loop heartbeats and signals until runCtx ends; heartbeats stop early when the caller's own
// context callerCtx ends.
func (r *progressReporter) loop(runCtx, callerCtx context.Context) {
	every := r.s.HeartbeatEvery
	defaults.Positive(&every, DefaultHeartbeatEvery)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		r.beat(runCtx, callerCtx, false)
		select {
		case <-runCtx.Done():
			return
		case <-tick.C:
		case <-r.kick:
		}
	}
}

// beat sends a heartbeat and, when due (or force), a progress signal.
func (r *progressReporter) beat(ctx, callerCtx context.Context, force bool) {
	every := r.s.ProgressEvery
	defaults.Positive(&every, DefaultProgressEvery)
	r.mu.Lock()
	p := r.latest
	send := r.s.Reporter != nil && r.dirty && (force || r.urgent || time.Since(r.lastSent) >= every)
	if send {
		r.dirty, r.urgent, r.lastSent = false, false, time.Now()
	}
	r.mu.Unlock()
	if callerCtx.Err() == nil && r.hb != nil {
		r.hb(p)
	}
	if !send {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	if err := r.s.Reporter.Progress(rctx, r.a.JobID, p); err != nil && ctx.Err() == nil {
		r.log.Warn().Err(err).Int64("iteration", p.Iteration).Msg("reporting progress to the job")
	}
}

// final reports the finished trainer's last progress at once.
func (r *progressReporter) final(ctx context.Context, res training.TrainerResult) {
	r.update(training.Progress{Iteration: res.FinalIteration, LastCheckpoint: res.LastCheckpoint})
	r.mu.Lock()
	r.dirty = true
	r.mu.Unlock()
	r.beat(ctx, ctx, true)
}
