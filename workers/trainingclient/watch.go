package trainingclient

import (
	"context"
	"fmt"
	"time"

	"github.com/schooner-ml/schooner/training"
)

// Watch reads the job's status every interval until its workflow closes and returns the
// final status. Each reading goes to show (nil shows nothing): a status, or the error of a
// query that failed while the job runs (a worker restarting), which is retried, not fatal.
// Failing to learn whether the job is closed ends the watch with that error.
func (c *Client) Watch(ctx context.Context, id string, every time.Duration, show func(training.JobStatus, error)) (training.JobStatus, error) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var last training.JobStatus
	for {
		closed, err := c.Closed(ctx, id)
		if err != nil {
			return last, err
		}
		st, qerr := c.Status(ctx, id)
		if qerr == nil {
			last = st
		}
		if show != nil {
			show(st, qerr)
		}
		if closed {
			return last, qerr
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-tick.C:
		}
	}
}

// Wait is Watch without showing anything: the job's final status once its workflow closes.
func (c *Client) Wait(ctx context.Context, id string, every time.Duration) (training.JobStatus, error) {
	return c.Watch(ctx, id, every, nil)
}

// Cancel asks the job to stop and waits, up to within, until its workflow has closed: it
// closes only after its release step ran (in a disconnected context, so the release itself
// is not cancelled). A cancelled job whose status cannot be read any more is reported as
// cancelled: its release still happened.
func (c *Client) Cancel(ctx context.Context, id string, within time.Duration) (training.JobStatus, error) {
	if err := c.Temporal.CancelWorkflow(ctx, id, ""); err != nil {
		return training.JobStatus{}, fmt.Errorf("cancelling job %s: %w", id, err)
	}
	wctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		closed, err := c.Closed(wctx, id)
		if err == nil && closed {
			break
		}
		select {
		case <-wctx.Done():
			return training.JobStatus{}, fmt.Errorf("waiting for job %s to release its instances: %w", id, wctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	st, err := c.Status(ctx, id)
	if err != nil {
		// Never a made-up status: a zero one would read "0 instances, $0.00".
		return training.JobStatus{}, fmt.Errorf("job %s is cancelled, but its final status cannot be read: %w", id, err)
	}
	return st, nil
}
