package router_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/serving/router"
)

// dispatches records what OnDispatch is told.
type dispatches struct {
	mu     sync.Mutex
	queued map[string][]time.Duration
}

func (d *dispatches) observe(id string, queued time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.queued[id] = append(d.queued[id], queued)
}

func (d *dispatches) of(id string) []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Duration(nil), d.queued[id]...)
}

// OnDispatch reports each request once, under the completion's id, with the time it spent in
// the queue: the second request, admitted while the first held the only slot, waited at
// least from the moment it was seen waiting until the first was released.
func TestOnDispatchReportsTheQueueingDelay(t *testing.T) {
	t.Parallel()
	d := &dispatches{queued: map[string][]time.Duration{}}
	w := startFake(t, "first+last")
	w.set(func(f *fakeWorker) { f.hold = 1 })
	h := newHarness(t, router.Options{MaxRunning: 1, OnDispatch: d.observe}, w)
	ctx := context.Background()

	a := h.client.Completions.NewStreaming(ctx, params("first", 3, 1))
	require.True(t, a.Next())
	idA := a.Current().ID
	b := h.client.Completions.NewStreaming(ctx, params("second", 3, 2))
	wait(t, "second waiting", func() bool { return h.r.Status().Waiting == 1 })
	seenWaiting := time.Now()
	require.Len(t, d.of(idA), 1, "the first was dispatched at once")

	released := time.Now()
	w.set(func(f *fakeWorker) { close(f.release) })
	readToEnd(t, a)
	chunks := readToEnd(t, b)
	require.Len(t, chunks, 3)
	idB := b.Current().ID
	require.NotEqual(t, idA, idB)

	qb := d.of(idB)
	require.Len(t, qb, 1, "one submit, one report")
	assert.GreaterOrEqual(t, qb[0], released.Sub(seenWaiting), "it waited at least while it was seen waiting")
	assert.Len(t, d.of(idA), 1)
}
