package colocate

import (
	"fmt"
	"math"
	"time"

	"github.com/schooner-ml/schooner/colocation"
)

// Supervisor adapts the admission rule to the HP side's measured slowdown, one window at a
// time: it halves the budget (and the SMs BE may hold beside HP work) when a window misses the
// target, and grows it on a window that meets it by one minimum budget plus a part of itself
// that scales with the headroom left under the target (growth), so a budget far below what
// the HP side tolerates reaches it in a few windows and one close to the target creeps. When
// the budget is already at its floor and the target is still missed for ThrottleAfter
// windows, it pauses the BE side for a cooldown; after EvictAfter throttles in a row, it
// evicts it. It holds no clock: Step takes the time and the board's counters, so the
// simulated GPU and the real runtime drive the same code.
type Supervisor struct {
	p          colocation.Params
	smCount    int
	budget     time.Duration
	smLimit    int
	state      colocation.BEState
	resumeAt   time.Time
	misses     int // windows in a row missing the target at the budget's floor
	throttles  int // throttles in a row not yet redeemed by ThrottleAfter good windows
	goodStreak int
	last       Snapshot
	started    bool
}

// Decision is what one window decided and why.
type Decision struct {
	Budget   time.Duration
	SMLimit  int
	State    colocation.BEState
	Slowdown float64 // the window's HP slowdown; 0 when HP ran no kernel in it
	Reason   string  // set when the state changed
}

// NewSupervisor starts from the parameters' initial budget and SM share of smCount SMs.
func NewSupervisor(p colocation.Params, smCount int) (*Supervisor, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if smCount < 1 {
		return nil, fmt.Errorf("supervisor: the device reports %d SMs", smCount)
	}
	return &Supervisor{p: p, smCount: smCount, budget: p.Budget, smLimit: shareOf(p.SMShare, smCount)}, nil
}

func shareOf(f float64, smCount int) int { return int(math.Floor(f * float64(smCount))) }

// Control is the decision in force, to write to the board at start.
func (s *Supervisor) Control() Decision {
	return Decision{Budget: s.budget, SMLimit: s.smLimit, State: s.state}
}

// Step closes one window at now with the board's counters.
func (s *Supervisor) Step(now time.Time, snap Snapshot) Decision {
	slowdown := windowSlowdown(s.last, snap, s.started)
	s.last, s.started = snap, true
	d := Decision{Slowdown: slowdown}
	switch {
	case s.state == colocation.Evicted:
	case s.state == colocation.Throttled:
		if !now.Before(s.resumeAt) {
			s.state, s.budget, s.misses = colocation.Running, s.p.MinBudget, 0
			d.Reason = fmt.Sprintf("cooldown over: BE resumes at the minimum budget %s", s.p.MinBudget)
		}
	case slowdown > s.p.TargetSlowdown:
		s.goodStreak = 0
		if s.budget > s.p.MinBudget {
			s.budget = max(s.p.MinBudget, s.budget/2)
			s.smLimit /= 2
			break
		}
		s.smLimit = 0
		s.misses++
		if s.misses < s.p.ThrottleAfter {
			break
		}
		s.misses = 0
		s.throttles++
		if s.throttles >= s.p.EvictAfter {
			s.state = colocation.Evicted
			d.Reason = fmt.Sprintf("HP slowdown %.2f× over the target %.2f× after %d throttles: BE evicted", slowdown, s.p.TargetSlowdown, s.throttles)
			break
		}
		s.state, s.resumeAt = colocation.Throttled, now.Add(s.p.Cooldown)
		d.Reason = fmt.Sprintf("HP slowdown %.2f× over the target %.2f× for %d windows at the minimum budget: BE paused for %s", slowdown, s.p.TargetSlowdown, s.p.ThrottleAfter, s.p.Cooldown)
	default:
		s.misses = 0
		s.goodStreak++
		if s.goodStreak >= s.p.ThrottleAfter {
			s.throttles = 0
		}
		// Grow only on evidence: a window without HP kernels says nothing about what BE
		// work costs the HP side, and a budget grown while HP slept would hit its return.
		if slowdown > 0 {
			s.budget = min(s.p.MaxBudget, s.budget+growth(s.p, s.budget, slowdown))
			s.smLimit = min(shareOf(s.p.SMShare, s.smCount), s.smLimit+max(1, s.smCount/16))
		}
	}
	d.Budget, d.SMLimit, d.State = s.budget, s.smLimit, s.state
	return d
}

// growth is what a window that met the target at slowdown adds to the budget: one minimum
// budget (the additive step), plus up to half the budget in proportion to the headroom, the
// share of the tolerated slowdown the window left unused. An additive step alone took 36
// windows (3.6 s) from 100 µs to 1 ms: on an H100 a burst of 500 decode requests ended
// before it got there, the BE side held at a tenth of what the HP side tolerated
// (BENCHMARKS.md, colocation, 2026-12-06).
func growth(p colocation.Params, budget time.Duration, slowdown float64) time.Duration {
	headroom := min(1, max(0, (p.TargetSlowdown-slowdown)/(p.TargetSlowdown-1)))
	return p.MinBudget + time.Duration(float64(budget)*headroom/2)
}

// windowSlowdown is the HP kernels' measured time over their fastest time in the window
// between two snapshots; 0 when no HP kernel completed in it.
func windowSlowdown(prev, cur Snapshot, hasPrev bool) float64 {
	if !hasPrev {
		prev = Snapshot{}
	}
	fastest := cur.HPFastest - prev.HPFastest
	if cur.HPKernels == prev.HPKernels || fastest <= 0 {
		return 0
	}
	return float64(cur.HPMeasured-prev.HPMeasured) / float64(fastest)
}
