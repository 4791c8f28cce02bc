package cloud

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestTimeScaleConvertsBothWays(t *testing.T) {
	s := TimeScale(60)
	assert.Equal(t, time.Second, s.Wall(time.Minute))
	assert.Equal(t, time.Hour, s.Sim(time.Minute))
	assert.InDelta(t, 1.0, s.SimHours(time.Minute), 1e-12)
	var unset TimeScale
	assert.Equal(t, time.Minute, unset.Wall(time.Minute), "unset is a real cloud's")
	assert.Equal(t, Real, TimeScaleOf(NewFake("fake")))
	assert.Equal(t, Real, TimeScaleOf(&Multi{Providers: []Provider{NewFake("a")}}))
}

func TestExpirySetKeepsTheLaterExpiryAndPrunes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := OfferingKey{Capacity: Spot, InstanceType: "g", Zone: "a"}
	var s ExpirySet
	s.Add(k, t0.Add(time.Minute))
	s.Add(k, t0.Add(30*time.Second))
	assert.Len(t, s, 1)
	assert.True(t, s.Has(k, t0.Add(59*time.Second)), "the later expiry wins")
	assert.False(t, s.Has(k, t0.Add(time.Minute)))
	s.Add(OfferingKey{Zone: "b"}, t0.Add(time.Hour))
	assert.True(t, s.HasZone("b", t0))
	s.Prune(t0.Add(2 * time.Minute))
	assert.Len(t, s, 1)
}

func TestVerdictOfIsTheLostInstanceRule(t *testing.T) {
	assert.Equal(t, VerdictAlive, VerdictOf(Instance{State: StateRunning}))
	assert.Equal(t, VerdictNotice, VerdictOf(Instance{State: StateRunning, Interruption: &Interruption{Kind: Notice}}))
	assert.Equal(t, VerdictPreempted, VerdictOf(Instance{State: StateRunning, Interruption: &Interruption{Kind: Preempted}}))
	assert.Equal(t, VerdictPreempted, VerdictOf(Instance{State: StatePreempted}))
	assert.Equal(t, VerdictGone, VerdictOf(Instance{State: StateTerminated}))
	assert.True(t, VerdictOf(Instance{State: StateTerminated}).Lost())
	assert.False(t, VerdictOf(Instance{State: StateRunning, Interruption: &Interruption{Kind: Notice}}).Lost())
}
