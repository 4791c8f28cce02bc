package gcp

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/sim/gceapi/gcetest"
)

// Through the real Compute client against the face: a preemption after the feed started
// becomes one event with the job's label; one from before, and a user's own delete, do not.
func TestPreemptionFeedFollowsZoneOperations(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	got := e.create(t, cloud.CreateRequest{JobID: "train-a", Zone: gcetest.ZoneA, InstanceType: gcetest.N1V100, Capacity: cloud.Spot, Count: 3})
	e.now = e.now.Add(time.Minute)
	require.NoError(t, e.fake.Preempt(got[0].ID)) // before the feed: history
	e.now = e.now.Add(time.Minute)
	f := &PreemptionFeed{P: e.p}
	require.NoError(t, f.Poll(ctx))
	assert.Empty(t, f.EventsSince(0))

	e.now = e.now.Add(time.Minute)
	require.NoError(t, e.fake.Preempt(got[1].ID))
	require.NoError(t, e.p.Terminate(ctx, []string{got[2].ID}))
	require.NoError(t, f.Poll(ctx))
	require.NoError(t, f.Poll(ctx), "a second poll adds nothing")
	ev := f.EventsSince(0)
	require.Len(t, ev, 1)
	assert.Equal(t, cloud.EventPreempted, ev[0].Kind)
	assert.Equal(t, got[1].ID, ev[0].Instance.ID)
	assert.Equal(t, "train-a", ev[0].Instance.JobID)
	assert.Equal(t, gcetest.ZoneA, ev[0].Instance.Interruption.Zone)
	assert.Empty(t, f.EventsSince(ev[0].Seq))
}
