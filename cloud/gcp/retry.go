package gcp

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

// retry calls f until it succeeds, fails with anything but throttling, or has been called
// r.Attempts times, waiting between calls with exponential backoff and jitter. Errors come
// back classified. The client library's own retries cover only 503/504 on reads, and GCE
// throttles with 429 and rate-limit reasons on every method, so this wraps each call.
func retry[T any](ctx context.Context, r Retry, f func(attempt int) (T, error)) (T, error) {
	b := backoff{r: r}
	for attempt := 1; ; attempt++ {
		v, err := f(attempt)
		err = classify(err)
		if err == nil || !cloud.IsThrottled(err) || attempt >= r.Attempts || !b.pause(ctx) {
			return v, err
		}
	}
}

// backoff doubles its delay from r.Initial up to r.Max.
type backoff struct {
	r     Retry
	delay time.Duration
}

// pause waits the next delay, between half and all of it so that clients throttled
// together do not come back together; false when ctx ended first.
func (b *backoff) pause(ctx context.Context) bool {
	if b.delay == 0 {
		b.delay = b.r.Initial
	} else {
		b.delay = min(b.delay*2, b.r.Max)
	}
	t := time.NewTimer(b.delay/2 + rand.N(b.delay/2+1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
