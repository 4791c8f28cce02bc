package servingwf

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/serving"
)

// droughtWorld offers no spot room until spotBack is set (under the world's lock); asked
// counts the offerings calls.
func droughtWorld(t *testing.T) (w *world, spotBack *bool, asked *int) {
	w = newWorld()
	spotBack, asked = new(bool), new(int)
	w.offers = func() []cloud.Offering {
		*asked++
		out := w.Offers("v1", 1, 1.2, 1.5)
		for i := range out {
			if !*spotBack {
				out[i].SpotCapacity = 0
			}
		}
		return out
	}
	return w, spotBack, asked
}

func fallbackInput() serving.DeployInput {
	in := deployInput()
	in.Spec.Spot = fleet.SpotWithFallback
	return in
}

// capacityOf is the capacity type of the machine (replica, stage) runs on now.
func (w *world) capacityOf(replica, stage int) cloud.CapacityType {
	id := w.current(replica, stage).InstanceID
	w.Lock()
	defer w.Unlock()
	return w.Instances[id].Capacity
}

// A spot-with-fallback deployment that fell back to on-demand machines during a spot drought
// moves each stage back to spot once spot returns, as it migrates after a notice: the spot
// standby is ready before the on-demand machine is released, and nothing fails over.
func TestStagesOnOnDemandFallbackMoveBackToSpotWhenItReturns(t *testing.T) {
	w, spotBack, _ := droughtWorld(t)
	env := newEnv(t, w)
	var onDemand [2]serving.StageAssignment
	env.RegisterDelayedCallback(func() {
		onDemand[0], onDemand[1] = w.current(0, 0), w.current(0, 1)
		w.Lock()
		*spotBack = true
		w.Unlock()
	}, time.Minute)
	mid := queryAt[serving.Status](t, env, serving.QueryStatus, 50*time.Second)
	st := runUntilStopped(t, env, fallbackInput(), 3*time.Minute, nil)

	assert.Equal(t, serving.PhaseServing, mid.Phase)
	for stage, a := range onDemand {
		require.NotEmpty(t, a.InstanceID)
		assert.Equal(t, cloud.OnDemand, w.Instances[a.InstanceID].Capacity, "stage %d fell back to on-demand", stage)
		assert.Equal(t, cloud.Spot, w.capacityOf(0, stage), "stage %d is back on spot", stage)
		now := w.current(0, stage)
		assert.True(t, now.Restore, "the spot standby restores the stage's KV cache")
		log := w.logged()
		readyAt, releasedAt := slices.Index(log, "ready "+now.InstanceID), slices.Index(log, "released "+a.InstanceID)
		require.GreaterOrEqual(t, releasedAt, 0, "the on-demand machine is released: %v", log)
		assert.Less(t, readyAt, releasedAt, "the spot standby is ready first: %v", log)
	}
	assert.Equal(t, 2, st.SpotReturns)
	assert.Zero(t, st.Failovers, "a move back to spot is not a failover")
	assert.Zero(t, st.Notices)
	assert.Empty(t, w.Leaked())
}

// Without spot room the stages keep their on-demand machines: a check every SpotReturnEvery
// (provider time) asks for offerings and buys nothing.
func TestStagesStayOnDemandWhileSpotIsDry(t *testing.T) {
	w, _, asked := droughtWorld(t)
	env := newEnv(t, w)
	st := runUntilStopped(t, env, fallbackInput(), 3*time.Minute, nil)

	assert.Zero(t, st.SpotReturns)
	w.Lock()
	acquires, checks := len(w.Acquires), *asked
	w.Unlock()
	assert.Len(t, w.Acquires, 2, "one on-demand machine per stage at the start, nothing after: %v", w.Acquires)
	for _, a := range w.Acquires[:acquires] {
		assert.Equal(t, cloud.OnDemand, a.Capacity)
	}
	// 3 minutes of test clock at 60×: a check every 10 s (10 provider minutes).
	assert.Greater(t, checks, 10, "the stages kept looking for spot")
	assert.Equal(t, cloud.OnDemand, w.capacityOf(0, 0))
	assert.Equal(t, cloud.OnDemand, w.capacityOf(0, 1))
	assert.Empty(t, w.Leaked())
}

// A spot-only deployment never holds on-demand machines, and an on-demand one never looks
// for spot: SpotReturnEvery < 0 turns the check off for the fallback policy too.
func TestNoSpotReturnWhenTurnedOff(t *testing.T) {
	w, spotBack, _ := droughtWorld(t)
	env := newEnv(t, w)
	env.RegisterDelayedCallback(func() {
		w.Lock()
		*spotBack = true
		w.Unlock()
	}, time.Minute)
	in := fallbackInput()
	in.Options.SpotReturnEvery = -1
	st := runUntilStopped(t, env, in, 3*time.Minute, nil)

	assert.Zero(t, st.SpotReturns)
	assert.Equal(t, cloud.OnDemand, w.capacityOf(0, 0))
	assert.Empty(t, w.Leaked())
}

// The restart-only baseline (IgnoreNotices) migrates nothing on a notice: the stage goes on
// on its machine until the machine is gone, then is replaced.
func TestIgnoringNoticesReplacesTheStageOnlyAfterTheLoss(t *testing.T) {
	w, env := newWorldEnv(t)
	noticed := noticeAt(env, w, 1, time.Minute)
	after := queryAt[serving.Status](t, env, serving.QueryStatus, 90*time.Second)
	env.RegisterDelayedCallback(func() { w.State(noticed().InstanceID, cloud.StatePreempted) }, 2*time.Minute)
	in := deployInput()
	in.Options.IgnoreNotices = true
	st := runUntilStopped(t, env, in, 3*time.Minute, nil)

	assert.Zero(t, after.Notices, "the notice was ignored")
	assert.Equal(t, noticed().InstanceID, after.Stages[1].InstanceID, "no migration before the loss")
	assert.Equal(t, 1, st.Preemptions)
	require.Len(t, st.FailoverRecords, 1)
	assert.False(t, st.FailoverRecords[0].Notice)
	assert.Greater(t, st.FailoverRecords[0].DowntimeSeconds, 0.0, "the stage was down until its replacement was ready")
	assert.NotEqual(t, noticed().InstanceID, w.current(0, 1).InstanceID)
	assert.Empty(t, w.Leaked())
}

// The deployment's meter takes the price a describe gives (spot prices move; the provider
// bills the one in effect): the status's hourly rate follows it.
func TestTheMeterFollowsTheDescribedPrice(t *testing.T) {
	w, env := newWorldEnv(t)
	env.RegisterDelayedCallback(func() {
		w.Lock()
		defer w.Unlock()
		for _, in := range w.Instances {
			in.PricePerHour = 2.5
		}
	}, time.Minute)
	before := queryAt[serving.Status](t, env, serving.QueryStatus, 50*time.Second)
	after := queryAt[serving.Status](t, env, serving.QueryStatus, 90*time.Second)
	runUntilStopped(t, env, deployInput(), 2*time.Minute, nil)

	assert.InDelta(t, 1+1.2, before.USDPerHour, 1e-9, "the prices at purchase (zones z-a and z-b)")
	assert.InDelta(t, 5, after.USDPerHour, 1e-9, "the prices the last describe gave")
}
