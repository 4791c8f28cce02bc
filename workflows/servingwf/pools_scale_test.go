package servingwf

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/schooner-ml/schooner/serving"
)

// scaleAt sends a scale update at the given test-clock time; rejected or failed updates are
// collected in errs, a completed one's status in done.
func scaleAt(t *testing.T, env *testsuite.TestWorkflowEnvironment, at time.Duration, id string, req serving.ScaleRequest,
	errs *[]error, done *serving.Status) {
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(serving.UpdateScale, id, &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { *errs = append(*errs, fmt.Errorf("%s: %w", id, err)) },
			OnComplete: func(v any, err error) {
				if err != nil {
					*errs = append(*errs, fmt.Errorf("%s: %w", id, err))
					return
				}
				if done != nil {
					*done = v.(serving.Status)
				}
			},
		}, req)
	}, at)
}

// The prefill pool scales on its own: a deployment started colocated gains a prefill replica
// (streaming to its decode replica's holders) without touching the decode replica, and loses
// it again, its machines released; bad counts are refused before anything changes.
func TestScaleUpdateAddsAndRemovesAPrefillReplica(t *testing.T) {
	w, env := newWorldEnv(t)
	one, zero, neg, over := 1, 0, -1, serving.MaxReplicas+1
	var errs, bad []error
	var up, down serving.Status
	scaleAt(t, env, 30*time.Second, "negative", serving.ScaleRequest{PrefillReplicas: &neg}, &bad, nil)
	scaleAt(t, env, 30*time.Second, "over", serving.ScaleRequest{PrefillReplicas: &over}, &bad, nil)
	scaleAt(t, env, 30*time.Second, "neither", serving.ScaleRequest{}, &bad, nil)
	scaleAt(t, env, time.Minute, "up", serving.ScaleRequest{PrefillReplicas: &one}, &errs, &up)
	mid := queryAt[serving.Status](t, env, serving.QueryStatus, 2*time.Minute)
	scaleAt(t, env, 3*time.Minute, "down", serving.ScaleRequest{PrefillReplicas: &zero}, &errs, &down)
	st := runUntilStopped(t, env, deployInput(), 4*time.Minute, nil)

	require.Empty(t, errs)
	require.Len(t, bad, 3)
	assert.Contains(t, bad[0].Error(), "prefill_replicas must be between 0 and")
	assert.Contains(t, bad[1].Error(), "prefill_replicas must be between 0 and")
	assert.Contains(t, bad[2].Error(), "replicas must be between 1 and")

	assert.Equal(t, 1, up.PrefillReplicas)
	assert.Equal(t, 1, up.Replicas, "the decode replicas stay as they are")
	assert.Equal(t, 1, mid.PrefillReplicas)
	require.Len(t, mid.Stages, 4)
	for _, s := range mid.Stages {
		assert.Equal(t, serving.StateReady, s.State, "%+v", s)
	}
	for stage := range 2 {
		pre, dec := w.currentIn(serving.PoolPrefill, 0, stage), w.current(0, (stage+1)%2)
		require.NotEmpty(t, pre.InstanceID)
		assert.Equal(t, holderOf(dec), pre.NextHolderAddr, "prefill stage %d streams to the decode replica's holder", stage)
	}

	assert.Zero(t, down.PrefillReplicas)
	for stage := range 2 {
		pre := w.currentIn(serving.PoolPrefill, 0, stage)
		assert.Contains(t, w.Released, pre.InstanceID, "the removed prefill stage's machine was released")
	}
	assert.Equal(t, serving.PhaseStopped, st.Phase)
	assert.Empty(t, w.Leaked())
}

// A prefill pool needs KV replication: the update says so instead of laying out replicas
// whose prompts could not reach the decode replicas.
func TestScaleUpdateRefusesAPrefillPoolWithoutReplication(t *testing.T) {
	_, env := newWorldEnv(t)
	in := deployInput()
	in.Spec.KVReplication = serving.ReplicationOff
	one := 1
	var bad []error
	scaleAt(t, env, time.Minute, "up", serving.ScaleRequest{PrefillReplicas: &one}, &bad, nil)
	runUntilStopped(t, env, in, 2*time.Minute, nil)
	require.Len(t, bad, 1)
	assert.Contains(t, bad[0].Error(), "needs kv_replication on")
}
