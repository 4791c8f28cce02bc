package sim

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
)

// running creates n spot instances of the one offering of m and boots them.
func running(t *testing.T, m *Market, zone, typ string, n int) []string {
	t.Helper()
	got, err := m.Create(ctx, spotReq(zone, typ, n))
	require.NoError(t, err)
	m.Advance(time.Hour)
	return cloud.IDs(got)
}

func TestPreemptWithNoticeRunsItsCourse(t *testing.T) {
	m := newMarket(t, oneOffering("us-west-2a", "p3.2xlarge", Constant(4)))
	id := running(t, m, "us-west-2a", "p3.2xlarge", 1)[0]
	at := m.Now()
	require.NoError(t, m.Preempt(id, 45*time.Second))

	intr := m.InterruptionOf(id)
	require.NotNil(t, intr)
	assert.Equal(t, cloud.Notice, intr.Kind)
	assert.Equal(t, at.Add(45*time.Second), intr.Deadline)
	verdict, _, err := cloud.ConfirmLost(ctx, m, id)
	require.NoError(t, err)
	assert.Equal(t, cloud.VerdictNotice, verdict)

	require.NoError(t, m.Preempt(id, time.Hour), "a later deadline leaves the earlier one")
	assert.Equal(t, at.Add(45*time.Second), m.InterruptionOf(id).Deadline)

	m.Advance(45 * time.Second)
	verdict, inst, err := cloud.ConfirmLost(ctx, m, id)
	require.NoError(t, err)
	assert.Equal(t, cloud.VerdictPreempted, verdict)
	assert.Equal(t, cloud.StatePreempted, inst.State)
	ev := m.EventsSince(0)
	require.Len(t, ofKind(ev, cloud.EventNotice), 1)
	require.Len(t, ofKind(ev, cloud.EventPreempted), 1)
	listed, err := m.List(ctx, map[string]string{cloud.JobTag: "job-1"})
	require.NoError(t, err)
	assert.Empty(t, listed)

	err = m.Preempt(id, 0)
	assert.True(t, errors.Is(err, cloud.ErrInvalidRequest), "%v", err)
	err = m.Preempt("i-nope", 0)
	assert.True(t, errors.Is(err, cloud.ErrNotFound), "%v", err)
}

func TestPreemptWithoutNoticeIsImmediate(t *testing.T) {
	m := newMarket(t, oneOffering("us-central1-b", "n1-standard-8+nvidia-tesla-v100:1", Constant(2)))
	ids := running(t, m, "us-central1-b", "n1-standard-8+nvidia-tesla-v100:1", 2)
	require.NoError(t, m.Preempt(ids[0], 0))
	inst, err := m.Describe(ctx, ids)
	require.NoError(t, err)
	assert.Equal(t, cloud.StatePreempted, inst[0].State)
	assert.Equal(t, cloud.StateRunning, inst[1].State)
	assert.Empty(t, ofKind(m.EventsSince(0), cloud.EventNotice))

	require.NoError(t, m.PreemptWithNotice(ids[1]))
	assert.Equal(t, m.Now().Add(30*time.Second), m.InterruptionOf(ids[1]).Deadline, "GCP's notice period")
}

func TestDrainRefusesNewSpotButKeepsRunning(t *testing.T) {
	m := newMarket(t, oneOffering("us-west-2a", "p3.2xlarge", Constant(4)))
	held := running(t, m, "us-west-2a", "p3.2xlarge", 1)
	n, err := m.Drain("us-west-2a")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	_, err = m.Create(ctx, spotReq("us-west-2a", "p3.2xlarge", 1))
	assert.True(t, errors.Is(err, cloud.ErrInsufficientCapacity), "%v", err)
	inst, err := m.Describe(ctx, held)
	require.NoError(t, err)
	assert.Equal(t, cloud.StateRunning, inst[0].State)
	assert.Nil(t, m.InterruptionOf(held[0]))

	_, err = m.Drain("mars-1a")
	assert.True(t, errors.Is(err, cloud.ErrNotFound), "%v", err)
}

func TestSetCapacityNoticesAboveTheLevel(t *testing.T) {
	key := Key{Zone: "us-west-2a", InstanceType: "p3.2xlarge"}
	m := newMarket(t, oneOffering(key.Zone, key.InstanceType, Constant(4)))
	held := running(t, m, key.Zone, key.InstanceType, 2)
	require.NoError(t, m.SetCapacity(key, 1))
	assert.Nil(t, m.InterruptionOf(held[0]), "the oldest stays")
	require.NotNil(t, m.InterruptionOf(held[1]), "the newest is noticed")
	assert.Error(t, m.SetCapacity(key, -1))
	assert.True(t, errors.Is(m.SetCapacity(Key{Zone: "x", InstanceType: "y"}, 1), cloud.ErrNotFound))
}

func TestCapacityIsNotHandedOutTwiceWhileInstancesDrain(t *testing.T) {
	key := Key{Zone: "us-west-2a", InstanceType: "p3.2xlarge"}
	m := newMarket(t, oneOffering(key.Zone, key.InstanceType, Constant(4)))
	held := running(t, m, key.Zone, key.InstanceType, 4)
	require.NoError(t, m.SetCapacity(key, 2))
	require.NotNil(t, m.InterruptionOf(held[3]))
	require.NotNil(t, m.InterruptionOf(held[2]))
	// The capacity comes back to 3 while two instances are still under notice: four are
	// live, so the offering has nothing to give until they are gone.
	require.NoError(t, m.SetCapacity(key, 3))
	level, free, ok := m.SpotCapacity(key.Zone, key.InstanceType)
	require.True(t, ok)
	assert.Equal(t, 3, level)
	assert.Zero(t, free, "instances under notice still occupy the capacity")
	_, err := m.Create(ctx, spotReq(key.Zone, key.InstanceType, 1))
	require.ErrorIs(t, err, cloud.ErrInsufficientCapacity)

	m.Advance(time.Hour) // the notices run out
	_, free, _ = m.SpotCapacity(key.Zone, key.InstanceType)
	assert.Equal(t, 1, free, "3 of capacity, 2 instances left")
}
