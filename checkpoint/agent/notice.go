package agent

import (
	"context"
	"time"
)

// Watcher tells the agent that its machine will be reclaimed. The agent owns this interface so
// it knows no cloud: the caller adapts the cloud's watcher of the instance metadata
// (cloud/aws.Watcher, cloud/gcp.Watcher) to it.
type Watcher interface {
	// PollNotice returns the deadline of an announced preemption and true, or false when none
	// is announced. A zero deadline means a preemption without notice: no time left at all.
	PollNotice(ctx context.Context) (deadline time.Time, announced bool, err error)
}

// WatcherFunc is a function that is a Watcher.
type WatcherFunc func(ctx context.Context) (deadline time.Time, announced bool, err error)

// PollNotice calls f.
func (f WatcherFunc) PollNotice(ctx context.Context) (time.Time, bool, error) { return f(ctx) }

// watchPollTimeout bounds one read of the instance metadata, so a metadata service that hangs
// delays the next poll instead of stopping the watch.
const watchPollTimeout = 5 * time.Second

// Notice tells the agent the machine will be reclaimed at deadline: from then on Poll answers
// checkpoint_now until each rank saved once more, the saves are emergency saves, and the
// uploader takes them first (or, when one cannot make it, the newest committed step). A second
// notice keeps the earlier deadline.
func (a *Agent) Notice(deadline time.Time) {
	a.mu.Lock()
	if a.notice != nil && !deadline.Before(a.notice.Deadline) {
		a.mu.Unlock()
		return
	}
	a.notice = &Notice{Deadline: deadline, Received: a.opts.Now()}
	left := deadline.Sub(a.notice.Received)
	a.mu.Unlock()
	a.log.Warn().Time("deadline", deadline).Dur("left", left).Msg("preemption notice: asking trainers for an emergency checkpoint")
	a.wake()
}

// currentNotice is the notice received, or nil.
func (a *Agent) currentNotice() *Notice {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.notice == nil {
		return nil
	}
	n := *a.notice
	return &n
}

// markSave records a save of rank r and says whether it is an emergency save: asked for by the
// trainer, or the first and every later save after a notice.
func (a *Agent) markSave(r *rankState, step int64, asked bool) bool {
	noticed := a.currentNotice() != nil
	r.mu.Lock()
	defer r.mu.Unlock()
	emergency := asked || noticed
	if emergency && r.emergencyStep < 0 {
		r.emergencyStep = step
	}
	return emergency
}

// checkpointNow says whether rank r (nil: any rank) should save now: a notice arrived and the
// rank has not saved since.
func (a *Agent) checkpointNow(r *rankState) (bool, *time.Time) {
	n := a.currentNotice()
	if n == nil {
		return false, nil
	}
	if r == nil {
		return true, &n.Deadline
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.emergencyStep < 0, &n.Deadline
}

// watch polls the instance metadata for a preemption notice until the agent closes. Failures
// are logged once per change of message, since a metadata service that is down says so every
// second.
func (a *Agent) watch(w Watcher) {
	defer a.bg.Done()
	t := time.NewTicker(a.opts.WatchInterval)
	defer t.Stop()
	lastErr := ""
	for {
		ctx, cancel := context.WithTimeout(a.ctx, watchPollTimeout)
		deadline, announced, err := w.PollNotice(ctx)
		cancel()
		switch {
		case err != nil:
			if a.ctx.Err() != nil {
				return
			}
			if err.Error() != lastErr {
				a.log.Warn().Err(err).Msg("polling instance metadata for a preemption notice")
				lastErr = err.Error()
			}
		case announced:
			lastErr = ""
			if deadline.IsZero() {
				deadline = a.opts.Now() // a preemption without notice: no time left at all
			}
			a.Notice(deadline)
		default:
			lastErr = ""
		}
		select {
		case <-a.ctx.Done():
			return
		case <-t.C:
		}
	}
}
