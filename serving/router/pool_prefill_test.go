package router_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/serving/router"
	"github.com/schooner-ml/schooner/serving/router/routertest"
)

// A Pool of a disaggregated deployment sends each completion's prompt to a prefill replica
// that feeds the decode replica chosen for it (one that streams to that replica's holders),
// a ready one first; a decode replica that no prefill replica feeds prefills its own.
func TestPoolPrefillsOnTheReplicasFeedingTheChosenDecodeReplica(t *testing.T) {
	t.Parallel()
	p, err := router.NewPool(router.Options{Model: modelID, Deployment: "dep-test", ReconnectBackoff: 10 * time.Millisecond})
	require.NoError(t, err)
	_, client := routertest.Serve(t, p)
	dw0, dw1 := startFake(t, "first+last"), startFake(t, "first+last")
	pw1, pw2 := startFake(t, "first+last"), startFake(t, "first+last")
	decode0 := router.ReplicaRoute{Replica: 0, Stages: addrs(dw0)}
	decode1 := router.ReplicaRoute{Replica: 1, Stages: addrs(dw1)}
	// Prefill replica 0 feeds decode replica 0 but is not ready: replica 2, which feeds it
	// too, takes its prompts.
	prefill0 := router.ReplicaRoute{Pool: router.PoolPrefill, Replica: 0, Feeds: 0}
	prefill1 := router.ReplicaRoute{Pool: router.PoolPrefill, Replica: 1, Feeds: 1, Stages: addrs(pw1)}
	prefill2 := router.ReplicaRoute{Pool: router.PoolPrefill, Replica: 2, Feeds: 0, Stages: addrs(pw2)}
	p.SetReplicas([]router.ReplicaRoute{decode0, decode1, prefill0, prefill1, prefill2})
	wait(t, "every stage connected", func() bool {
		n := 0
		for _, st := range p.Status().Stages {
			if st.State == router.ConnConnected {
				n++
			}
		}
		return n == 4
	})
	complete := func(prompt string, seed int64) {
		t.Helper()
		res, err := client.Completions.New(context.Background(), params(prompt, 6, seed))
		require.NoError(t, err)
		assert.Equal(t, expectedText(prompt, seed, 6), res.Choices[0].Text)
	}

	complete("first", 1) // decode replica 0 (equal load: the lowest)
	require.Len(t, pw2.submitted(), 1)
	assert.True(t, pw2.submitted()[0].Handoff)
	assert.Empty(t, pw1.submitted(), "prefill replica 1 feeds another decode replica")
	require.Len(t, dw0.submitted(), 1)
	assert.True(t, dw0.submitted()[0].Expect)
	assert.Equal(t, pw2.submitted()[0].Request, dw0.submitted()[0].Request)

	// Decode replica 0 loses a stage: completions go to replica 1, prompts to replica 1's feeder.
	decode0.Stages = nil
	p.SetReplicas([]router.ReplicaRoute{decode0, decode1, prefill0, prefill1, prefill2})
	complete("second", 2)
	require.Len(t, pw1.submitted(), 1)
	require.Len(t, dw1.submitted(), 1)
	assert.True(t, dw1.submitted()[0].Expect)
	assert.Len(t, pw2.submitted(), 1)

	// Prefill replica 1 leaves: decode replica 1 has no feeder and prefills its own.
	p.SetReplicas([]router.ReplicaRoute{decode0, decode1, prefill0, prefill2})
	complete("third", 3)
	assert.Len(t, pw1.submitted(), 1)
	require.Len(t, dw1.submitted(), 2)
	assert.False(t, dw1.submitted()[1].Expect, "prefilled where it is decoded")
	assert.Zero(t, dw1.submitted()[1].ResumeFrom)
	require.NotNil(t, p.Status().Prefill)
	assert.EqualValues(t, 2, p.Status().Prefill.Completed, "two prompts computed by the prefill replicas (one since drained)")
	assert.EqualValues(t, 3, p.Status().Counters.Completed, "each completion counted once")
	for _, st := range p.Status().Stages {
		if st.Addr == pw2.addr() {
			assert.Equal(t, router.PoolPrefill, st.Pool, "status names the prefill replicas' stages")
		}
	}
}
