package workers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers/workerstest"
)

// TestPreemptionRelaySignalsOnlyNewPreemptions checks the relay tells a job of each of its
// instances the provider preempted, once, and nothing else: not notices (the node agent
// relays those), not terminations, not instances without a job, not events before its start.
func TestPreemptionRelaySignalsOnlyNewPreemptions(t *testing.T) {
	ctx := context.Background()
	f := cloud.NewFake("fake", cloud.Offering{Provider: "fake", Zone: "z1", InstanceType: "gpu.1", GPUsPerInstance: 1, SpotPrice: 1, OnDemandPrice: 3})
	create := func(job string) string {
		got, err := f.Create(ctx, cloud.CreateRequest{JobID: job, Zone: "z1", InstanceType: "gpu.1", Capacity: cloud.Spot, Count: 1})
		require.NoError(t, err)
		return got[0].ID
	}
	before := create("train-a")
	require.NoError(t, f.Preempt(before)) // already in the log when the relay starts

	rec := workerstest.NewNoticeRecorder()
	log := f.EventsSince(0)
	r := &PreemptionRelay{Source: f, Reporter: rec, After: log[len(log)-1].Seq}

	a := create("train-a")
	b := create("train-b")
	orphan := create("")
	ended := create("train-b")
	require.NoError(t, f.AnnounceNotice(a, time.Now().Add(time.Minute)))
	require.NoError(t, f.Preempt(a))
	require.NoError(t, f.Preempt(orphan))
	require.NoError(t, f.Terminate(ctx, []string{ended}))
	r.Relay(ctx)
	r.Relay(ctx) // nothing new: nothing sent twice

	assert.Equal(t, []training.PreemptionNotice{{InstanceID: a, Kind: cloud.Preempted}}, rec.Of("train-a"))
	assert.Empty(t, rec.Of("train-b"))

	require.NoError(t, f.Preempt(b))
	r.Relay(ctx)
	assert.Equal(t, []training.PreemptionNotice{{InstanceID: b, Kind: cloud.Preempted}}, rec.Of("train-b"))
	assert.Len(t, rec.Of(""), 0, "an instance without a job is nobody's to tell")
}
