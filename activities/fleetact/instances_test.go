package fleetact

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/activities/internal/acttest"
	"github.com/schooner-ml/schooner/cloud"
)

// testOffers is the two A100 zones of region r1.
func testOffers() []cloud.Offering { return acttest.Offers()[:2] }

func TestAcquireInstancesReportsShortageAsResult(t *testing.T) {
	f := cloud.NewFake("fake", testOffers()...)
	key := cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: "p4", Zone: "r1-a"}
	f.Capacity[key] = 1
	tr := &Instances{Provider: f}
	res, err := tr.AcquireInstances(context.Background(), cloud.CreateRequest{JobID: "train-x", Zone: "r1-a", InstanceType: "p4", Capacity: cloud.Spot, Count: 3})
	require.NoError(t, err, "a capacity shortage is a result")
	require.Len(t, res.Instances, 1)
	assert.Equal(t, 2, res.CapacityShort)
	assert.Equal(t, []cloud.OfferingKey{key}, res.Unavailable)

	listed, err := tr.ListJobInstances(context.Background(), "train-x")
	require.NoError(t, err)
	require.Len(t, listed, 1, "instances are tagged with the job")

	f.InjectError("Create", &cloud.Error{Kind: cloud.ErrThrottled, Provider: "fake"})
	_, err = tr.AcquireInstances(context.Background(), cloud.CreateRequest{JobID: "train-x", Zone: "r1-b", InstanceType: "p4", Capacity: cloud.Spot, Count: 1})
	require.Error(t, err, "throttling is retried by Temporal")
	assert.True(t, cloud.IsThrottled(err))
}

func TestDescribeReleaseAndList(t *testing.T) {
	f := cloud.NewFake("fake", testOffers()...)
	tr := &Instances{Provider: f}
	ctx := context.Background()
	res, err := tr.AcquireInstances(ctx, cloud.CreateRequest{JobID: "j", Zone: "r1-a", InstanceType: "p4", Capacity: cloud.Spot, Count: 2})
	require.NoError(t, err)
	a, b := res.Instances[0].ID, res.Instances[1].ID
	require.NoError(t, f.Preempt(a))
	got, err := tr.DescribeInstances(ctx, []string{a, b, "ghost"})
	require.NoError(t, err)
	states := map[string]cloud.State{}
	for _, in := range got {
		states[in.ID] = in.State
	}
	assert.Equal(t, cloud.StatePreempted, states[a])
	assert.Equal(t, cloud.StateTerminated, states["ghost"], "an id the provider does not know is reported gone")
	assert.Equal(t, cloud.StateRunning, states[b])

	require.NoError(t, tr.ReleaseInstances(ctx, []string{a, b}))
	require.NoError(t, tr.ReleaseInstances(ctx, []string{a, b}), "releasing twice is fine")
	left, err := tr.ListJobInstances(ctx, "j")
	require.NoError(t, err)
	assert.Empty(t, left)
}
