package colocate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/colocation"
)

// window advances a synthetic board by one window in which HP kernels ran at this slowdown.
type fakeWindows struct {
	snap Snapshot
	now  time.Time
}

func (f *fakeWindows) next(p colocation.Params, slowdown float64) (time.Time, Snapshot) {
	f.now = f.now.Add(p.Window)
	f.snap.HPKernels += 100
	f.snap.HPFastest += 10 * time.Millisecond
	f.snap.HPMeasured += time.Duration(slowdown * float64(10*time.Millisecond))
	return f.now, f.snap
}

// testParams are the defaults with the budgets these tests count in.
func testParams() colocation.Params {
	p := colocation.DefaultParams()
	p.Budget, p.MinBudget, p.MaxBudget = 400*us, 50*us, 2*time.Millisecond
	return p
}

func TestSupervisorHalvesOnAMissAndGrowsWithTheHeadroomOnAHit(t *testing.T) {
	p := testParams()
	s, err := NewSupervisor(p, 132)
	require.NoError(t, err)
	require.Equal(t, Decision{Budget: 400 * us, SMLimit: 66}, s.Control())

	var w fakeWindows
	d := s.Step(w.next(p, 1.30))
	require.InDelta(t, 1.30, d.Slowdown, 1e-9)
	require.Equal(t, 200*us, d.Budget)
	require.Equal(t, 33, d.SMLimit)
	// Half the tolerated 10% left unused: the minimum plus a quarter of the budget.
	d = s.Step(w.next(p, 1.05))
	require.Equal(t, 300*us, d.Budget)
	require.Equal(t, 41, d.SMLimit)
	require.Equal(t, colocation.Running, d.State)
	// At the target: the minimum alone.
	d = s.Step(w.next(p, 1.10))
	require.Equal(t, 350*us, d.Budget)
	// No slowdown at all (or a faster window): the minimum plus half the budget.
	d = s.Step(w.next(p, 0.98))
	require.Equal(t, 575*us, d.Budget)

	// A window with no HP kernel is no evidence: nothing moves.
	w.now = w.now.Add(p.Window)
	d = s.Step(w.now, w.snap)
	require.Zero(t, d.Slowdown)
	require.Equal(t, 575*us, d.Budget)

	for range 100 {
		d = s.Step(w.next(p, 1.0))
	}
	require.Equal(t, p.MaxBudget, d.Budget)
	require.Equal(t, 66, d.SMLimit, "never above the configured share")
}

func TestSupervisorThrottlesAtTheFloorThenEvicts(t *testing.T) {
	p := testParams()
	p.ThrottleAfter, p.EvictAfter, p.Cooldown = 2, 2, 300*time.Millisecond
	s, err := NewSupervisor(p, 132)
	require.NoError(t, err)
	var w fakeWindows

	// 400 → 200 → 100 → 50 µs, then two misses at the floor throttle.
	for _, want := range []time.Duration{200 * us, 100 * us, 50 * us} {
		require.Equal(t, want, s.Step(w.next(p, 2)).Budget)
	}
	require.Equal(t, colocation.Running, s.Step(w.next(p, 2)).State)
	d := s.Step(w.next(p, 2))
	require.Equal(t, colocation.Throttled, d.State)
	require.Contains(t, d.Reason, "paused for 300ms")
	require.Zero(t, d.SMLimit)

	// Paused through the cooldown (HP now fast: BE is not running), then resumed at the floor.
	require.Equal(t, colocation.Throttled, s.Step(w.next(p, 1)).State)
	require.Equal(t, colocation.Throttled, s.Step(w.next(p, 1)).State)
	d = s.Step(w.next(p, 1))
	require.Equal(t, colocation.Running, d.State)
	require.Contains(t, d.Reason, "resumes")

	// Missing again at the floor: the second throttle in a row evicts.
	s.Step(w.next(p, 3))
	d = s.Step(w.next(p, 3))
	require.Equal(t, colocation.Evicted, d.State)
	require.Contains(t, d.Reason, "evicted")
	require.Equal(t, colocation.Evicted, s.Step(w.next(p, 1)).State, "eviction is final")
}

func TestSupervisorForgivesAThrottleAfterEnoughGoodWindows(t *testing.T) {
	p := testParams()
	p.ThrottleAfter, p.EvictAfter, p.Cooldown, p.Budget = 1, 2, p.Window, p.MinBudget
	s, err := NewSupervisor(p, 132)
	require.NoError(t, err)
	var w fakeWindows
	require.Equal(t, colocation.Throttled, s.Step(w.next(p, 2)).State)
	require.Equal(t, colocation.Running, s.Step(w.next(p, 1)).State)
	// A good window (at the target: no headroom, the budget grows by the minimum alone, 50 µs)
	// redeems the throttle (ThrottleAfter = 1).
	s.Step(w.next(p, p.TargetSlowdown))
	require.Equal(t, colocation.Running, s.Step(w.next(p, 2)).State, "back to the floor first")
	require.Equal(t, colocation.Throttled, s.Step(w.next(p, 2)).State, "a fresh first throttle, not an eviction")
}

func TestNewSupervisorRefusesBadParams(t *testing.T) {
	p := testParams()
	p.TargetSlowdown = 0.9
	_, err := NewSupervisor(p, 132)
	require.ErrorContains(t, err, "target_slowdown")
	_, err = NewSupervisor(colocation.DefaultParams(), 0)
	require.ErrorContains(t, err, "0 SMs")
}
