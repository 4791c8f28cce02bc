package cloud

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
)

func fakeWithOne(t *testing.T) (*Fake, string) {
	t.Helper()
	f := NewFake("fake", Offering{Provider: "fake", Region: "r", Zone: "r-a", InstanceType: "x1", GPUType: gpu.V100, GPUsPerInstance: 1, SpotPrice: 1, OnDemandPrice: 3})
	got, err := f.Create(context.Background(), CreateRequest{JobID: "job", Zone: "r-a", InstanceType: "x1", Capacity: Spot, Count: 1})
	require.NoError(t, err)
	return f, got[0].ID
}

func TestConfirmLostNeverGuesses(t *testing.T) {
	ctx := context.Background()
	f, id := fakeWithOne(t)

	v, inst, err := ConfirmLost(ctx, f, id)
	require.NoError(t, err)
	assert.Equal(t, VerdictAlive, v, "a quiet but running instance is alive")
	assert.False(t, v.Lost())
	assert.Equal(t, id, inst.ID)

	f.InjectError("Describe", &Error{Kind: ErrThrottled, Provider: "fake"})
	_, _, err = ConfirmLost(ctx, f, id)
	require.Error(t, err, "when the provider cannot be asked there is no verdict")
	assert.True(t, IsThrottled(err))

	require.NoError(t, f.AnnounceNotice(id, time.Now().Add(2*time.Minute)))
	v, _, err = ConfirmLost(ctx, f, id)
	require.NoError(t, err)
	assert.Equal(t, VerdictNotice, v)
	assert.False(t, v.Lost())

	require.NoError(t, f.Preempt(id))
	v, _, err = ConfirmLost(ctx, f, id)
	require.NoError(t, err)
	assert.Equal(t, VerdictPreempted, v)
	assert.True(t, v.Lost())

	f.Forget(id)
	v, inst, err = ConfirmLost(ctx, f, id)
	require.NoError(t, err)
	assert.Equal(t, VerdictGone, v)
	assert.Nil(t, inst)
}

func TestConfirmLostTerminated(t *testing.T) {
	ctx := context.Background()
	f, id := fakeWithOne(t)
	require.NoError(t, f.Terminate(ctx, []string{id}))
	v, _, err := ConfirmLost(ctx, f, id)
	require.NoError(t, err)
	assert.Equal(t, VerdictGone, v)
}

func TestFakePartialCreateAndEvents(t *testing.T) {
	ctx := context.Background()
	o := Offering{Provider: "fake", Region: "r", Zone: "r-a", InstanceType: "x1", GPUType: gpu.V100, GPUsPerInstance: 1, SpotPrice: 1, OnDemandPrice: 3}
	f := NewFake("fake", o)
	f.Capacity[o.Key(Spot)] = 2
	got, err := f.Create(ctx, CreateRequest{JobID: "j", Zone: "r-a", InstanceType: "x1", Capacity: Spot, Count: 3, Tags: map[string]string{"team": "ml"}})
	require.Len(t, got, 2)
	require.True(t, IsInsufficientCapacity(err))
	e, _ := AsError(err)
	assert.Equal(t, o.Key(Spot), *e.Offering)
	assert.Equal(t, "ml", got[0].Tags["team"])
	assert.Equal(t, "j", got[0].Tags[JobTag])

	_, err = f.Create(ctx, CreateRequest{Zone: "r-a", InstanceType: "x1", Capacity: Spot, Count: 1})
	assert.True(t, IsInsufficientCapacity(err), "capacity is used up")
	_, err = f.Create(ctx, CreateRequest{Zone: "nowhere", InstanceType: "x1", Capacity: Spot, Count: 1})
	assert.True(t, IsNotFound(err))
	_, err = f.Create(ctx, CreateRequest{Zone: "r-a", InstanceType: "x1", Capacity: "cheap", Count: 1})
	assert.True(t, IsInvalidRequest(err))

	listed, err := f.List(ctx, map[string]string{JobTag: "j"})
	require.NoError(t, err)
	assert.Len(t, listed, 2)
	require.NoError(t, f.Terminate(ctx, []string{got[0].ID, "unknown"}))
	listed, _ = f.List(ctx, map[string]string{JobTag: "j"})
	assert.Len(t, listed, 1, "terminated instances are not listed")

	evs := f.EventsSince(0)
	kinds := []EventKind{}
	for _, ev := range evs {
		kinds = append(kinds, ev.Kind)
	}
	assert.Equal(t, []EventKind{EventCreated, EventRunning, EventCreated, EventRunning, EventTerminated}, kinds)
	assert.Len(t, f.EventsSince(4), 1)
	assert.Empty(t, f.EventsSince(5))
	assert.Equal(t, 4, f.CallCount("Create"))

	f.InjectError("List", errors.New("down"))
	_, err = f.List(ctx, nil)
	assert.Error(t, err)
	f.Reset()
	assert.Empty(t, f.EventsSince(0))
}
