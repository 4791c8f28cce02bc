package colocation

import (
	"errors"
	"fmt"
	"time"
)

// Params are what the runtime and its supervisor apply to one colocated pair. The zero value
// is not valid: start from DefaultParams.
type Params struct {
	// TargetSlowdown is the HP side's tolerated slowdown against the GPU alone (1.10: at most
	// 10% slower), measured on its kernels' time from being eligible to completion against the
	// fastest time seen for the same kernel and shape.
	TargetSlowdown float64 `json:"target_slowdown"`
	// Budget is the initial cap on outstanding BE work (the profiled durations of BE kernels
	// launched and not yet complete); an HP kernel arriving waits at most about this long for
	// BE blocks to leave the SMs. The supervisor moves it between MinBudget and MaxBudget.
	Budget    time.Duration `json:"budget"`
	MinBudget time.Duration `json:"min_budget"`
	MaxBudget time.Duration `json:"max_budget"`
	// IdleBudget is the cap on outstanding BE work while no HP kernel is outstanding, where it is
	// larger than the budget (0: the budget applies then too). Fixed, not adapted. A queue of
	// 100 µs starves a BE program of many small kernels (PyTorch's launches cannot run ahead);
	// a deeper one delays an arriving HP kernel by as much (on an H100, under MPS with the BE
	// side at below-normal priority, 2 ms of GEMM pieces got the BE side evicted).
	IdleBudget time.Duration `json:"idle_budget,omitempty"`
	// SMShare is the fraction of the device's SMs that BE kernels may occupy while HP work is
	// running (Orion's SM threshold), and only for kernels whose bound differs from the HP
	// side's. The count comes from the device at start, never from a constant.
	SMShare float64 `json:"sm_share"`
	// Window is how often the supervisor reads the HP side's slowdown and adapts.
	Window time.Duration `json:"window"`
	// ThrottleAfter is how many windows in a row may miss the target with the budget already at
	// MinBudget before the BE side is paused for Cooldown.
	ThrottleAfter int           `json:"throttle_after"`
	Cooldown      time.Duration `json:"cooldown"`
	// EvictAfter is how many throttles in a row (each followed by a miss) evict the BE side.
	EvictAfter int `json:"evict_after"`
}

// DefaultParams are the defaults: HP within 10%, BE work capped at 100 µs outstanding to start
// (on the simulated H200 pair a larger start cost the HP side its target before the supervisor
// caught up: docs/colocation.md), half the SMs to complementary BE kernels while HP runs,
// adapting every 100 ms.
func DefaultParams() Params {
	return Params{
		TargetSlowdown: 1.10,
		Budget:         100 * time.Microsecond,
		MinBudget:      25 * time.Microsecond,
		MaxBudget:      time.Millisecond,
		SMShare:        0.5,
		Window:         100 * time.Millisecond,
		ThrottleAfter:  3,
		Cooldown:       time.Second,
		EvictAfter:     3,
	}
}

// Validate refuses parameters that cannot work, naming the field.
func (p Params) Validate() error {
	var errs []error
	if !(p.TargetSlowdown > 1 && p.TargetSlowdown <= 10) {
		errs = append(errs, fmt.Errorf("target_slowdown %.3g: must be above 1 (1.10 tolerates 10%%) and at most 10", p.TargetSlowdown))
	}
	if p.MinBudget <= 0 {
		errs = append(errs, fmt.Errorf("min_budget %s: must be positive", p.MinBudget))
	}
	if p.MaxBudget < p.MinBudget {
		errs = append(errs, fmt.Errorf("max_budget %s: must be at least min_budget %s", p.MaxBudget, p.MinBudget))
	}
	if p.Budget < p.MinBudget || p.Budget > p.MaxBudget {
		errs = append(errs, fmt.Errorf("budget %s: must lie within min_budget %s and max_budget %s", p.Budget, p.MinBudget, p.MaxBudget))
	}
	if p.IdleBudget < 0 {
		errs = append(errs, fmt.Errorf("idle_budget %s: must not be negative (0: the budget)", p.IdleBudget))
	}
	if !(p.SMShare >= 0 && p.SMShare <= 1) {
		errs = append(errs, fmt.Errorf("sm_share %.3g: must be a fraction from 0 to 1", p.SMShare))
	}
	if p.Window <= 0 {
		errs = append(errs, fmt.Errorf("window %s: must be positive", p.Window))
	}
	if p.ThrottleAfter < 1 {
		errs = append(errs, fmt.Errorf("throttle_after %d: must be at least 1", p.ThrottleAfter))
	}
	if p.Cooldown <= 0 {
		errs = append(errs, fmt.Errorf("cooldown %s: must be positive", p.Cooldown))
	}
	if p.EvictAfter < 1 {
		errs = append(errs, fmt.Errorf("evict_after %d: must be at least 1", p.EvictAfter))
	}
	return errors.Join(errs...)
}

// BEState is the supervisor's verdict on the BE side.
type BEState int

// Running: admitted by the rule. Throttled: paused for a cooldown, no BE kernel launches.
// Evicted: the BE side is to be stopped; the control plane kills it and reports why.
const (
	Running BEState = iota
	Throttled
	Evicted
)

// String names the state as status output shows it.
func (s BEState) String() string {
	switch s {
	case Running:
		return "running"
	case Throttled:
		return "throttled"
	case Evicted:
		return "evicted"
	}
	return fmt.Sprintf("BEState(%d)", int(s))
}
