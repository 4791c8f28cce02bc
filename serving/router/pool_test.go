package router_test

import (
	"context"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/serving/router"
	"github.com/schooner-ml/schooner/serving/router/routertest"
)

// poolHarness is a Pool behind an HTTP server and the official client, with one holding
// first+last fake worker per replica (generating hold tokens, then waiting for release).
type poolHarness struct {
	p       *router.Pool
	client  openai.Client
	workers map[int]*fakeWorker
}

func newPoolHarness(t *testing.T, hold int, replicas ...int) *poolHarness {
	t.Helper()
	p, err := router.NewPool(router.Options{Model: modelID, Deployment: "dep-test", ReconnectBackoff: 10 * time.Millisecond})
	require.NoError(t, err)
	_, client := routertest.Serve(t, p)
	h := &poolHarness{p: p, workers: map[int]*fakeWorker{}, client: client}
	var routes []router.ReplicaRoute
	for _, id := range replicas {
		w := startFake(t, "first+last")
		w.set(func(f *fakeWorker) { f.hold = hold })
		h.workers[id] = w
		routes = append(routes, router.ReplicaRoute{Replica: id, Stages: addrs(w)})
	}
	p.SetReplicas(routes)
	wait(t, "every replica connected", func() bool {
		for _, st := range p.Status().Stages {
			if st.State != router.ConnConnected {
				return false
			}
		}
		return len(p.Status().Stages) == len(replicas)
	})
	return h
}

func TestPoolSpreadsCompletionsOverTheReadyReplicas(t *testing.T) {
	t.Parallel()
	h := newPoolHarness(t, 2, 0, 1)
	var streams []func() []string
	for i := range 4 {
		s := h.client.Completions.NewStreaming(context.Background(), params("spread", 6, int64(i)))
		streams = append(streams, func() []string { c, _, _ := readStream(t, s, 6); return c })
		before, _, _ := readStream(t, s, 2) // held: the request stays on its replica
		require.Len(t, before, 2)
	}
	// the least loaded replica takes each: two and two
	assert.Len(t, h.workers[0].submitted(), 2)
	assert.Len(t, h.workers[1].submitted(), 2)
	st := h.p.Status()
	assert.True(t, st.Ready)
	assert.Equal(t, 4, st.Running)
	for _, w := range h.workers {
		w.set(func(f *fakeWorker) { close(f.release) })
	}
	for _, rest := range streams {
		assert.Len(t, rest(), 4)
	}
	wait(t, "all completed", func() bool { return h.p.Status().Counters.Completed == 4 })
}

func TestPoolFailoverResumesOnTheSameReplica(t *testing.T) {
	t.Parallel()
	h := newPoolHarness(t, 3, 0, 1)
	s := h.client.Completions.NewStreaming(context.Background(), params("stay", 8, 5))
	before, _, _ := readStream(t, s, 3)
	require.Len(t, before, 3)
	lost := 0
	if len(h.workers[1].submitted()) == 1 {
		lost = 1
	}
	other := 1 - lost
	h.workers[lost].kill()
	wait(t, "paused", func() bool { return h.p.Status().Paused == 1 })

	// the control plane: the lost replica is not ready, then its replacement is
	h.p.SetReplicas([]router.ReplicaRoute{{Replica: lost}, {Replica: other, Stages: addrs(h.workers[other])}})
	b := startFake(t, "first+last")
	h.p.SetReplicas([]router.ReplicaRoute{{Replica: lost, Stages: addrs(b)}, {Replica: other, Stages: addrs(h.workers[other])}})
	rest, _, _ := readStream(t, s, 5)
	assert.Equal(t, expectedText("stay", 5, 8), concat(before)+concat(rest))
	require.Len(t, b.submitted(), 1, "the replacement of the lost replica resumes the request")
	assert.Equal(t, 3, b.submitted()[0].ResumeFrom)
	assert.Empty(t, h.workers[other].submitted(), "the other replica never sees it")
}

func TestPoolDrainsAReplicaThatLeft(t *testing.T) {
	t.Parallel()
	h := newPoolHarness(t, 2, 0, 1)
	s0 := h.client.Completions.NewStreaming(context.Background(), params("a", 5, 1))
	_, _, _ = readStream(t, s0, 2)
	s1 := h.client.Completions.NewStreaming(context.Background(), params("b", 5, 2))
	_, _, _ = readStream(t, s1, 2)
	require.Len(t, h.workers[1].submitted(), 1)

	// replica 1 leaves (scaled down): its request finishes there, new ones go to replica 0
	h.p.SetReplicas([]router.ReplicaRoute{{Replica: 0, Stages: addrs(h.workers[0])}})
	res, err := func() (*openai.Completion, error) {
		h.workers[0].set(func(f *fakeWorker) { f.hold = 0 })
		return h.client.Completions.New(context.Background(), params("c", 3, 3))
	}()
	require.NoError(t, err)
	assert.Equal(t, expectedText("c", 3, 3), res.Choices[0].Text)
	assert.Len(t, h.workers[1].submitted(), 1, "no new request for the replica that left")
	h.workers[1].set(func(f *fakeWorker) { close(f.release) })
	rest, _, _ := readStream(t, s1, 3)
	assert.Len(t, rest, 3, "the leaving replica finishes what it has")
	wait(t, "the replica that left is closed", func() bool {
		for _, st := range h.p.Status().Stages {
			if st.Replica != 0 {
				return false
			}
		}
		return true
	})
	h.workers[0].set(func(f *fakeWorker) { close(f.release) })
	_, _, _ = readStream(t, s0, 3)
	wait(t, "counters kept across the drain", func() bool { return h.p.Status().Counters.Completed == 3 })
}

func concat(ss []string) string {
	out := ""
	for _, s := range ss {
		out += s
	}
	return out
}
