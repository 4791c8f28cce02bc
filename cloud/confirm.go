package cloud

import (
	"context"
	"fmt"
)

// Verdict is what the provider's own state says about an instance that went quiet.
type Verdict string

const (
	// VerdictAlive: the provider still runs the instance. A missed heartbeat is then a
	// network or agent problem, never a reason to replan.
	VerdictAlive Verdict = "alive"
	// VerdictNotice: running, but a preemption notice is out. Prepare, do not relaunch yet.
	VerdictNotice Verdict = "notice"
	// VerdictPreempted: the provider reclaimed it.
	VerdictPreempted Verdict = "preempted"
	// VerdictGone: terminated, or no longer known to the provider.
	VerdictGone Verdict = "gone"
)

// Lost reports whether the instance will not come back.
func (v Verdict) Lost() bool { return v == VerdictPreempted || v == VerdictGone }

// ConfirmLost asks the provider what became of an instance that stopped heartbeating. It is
// the only way schooner decides an instance is lost: a status probe timing out is not a
// preemption (SkyPilot's most common false alarm). When the provider cannot be asked, the
// error is returned and the caller must not act on a guess.
func ConfirmLost(ctx context.Context, p Provider, id string) (Verdict, *Instance, error) {
	got, err := p.Describe(ctx, []string{id})
	if err != nil {
		return "", nil, fmt.Errorf("confirming state of %s with %s: %w", id, p.Name(), err)
	}
	for i := range got {
		inst := got[i]
		if inst.ID != id {
			continue
		}
		return VerdictOf(inst), &inst, nil
	}
	return VerdictGone, nil, nil
}

// VerdictOf is the lost-instance rule applied to an instance as the provider described it:
// preempted when the provider reclaimed it (by state or by a preemption event), gone when it
// is terminated, notice while it runs under a preemption notice, alive otherwise. ConfirmLost
// and the job workflows (which describe instances through an activity) both decide by it.
func VerdictOf(inst Instance) Verdict {
	switch {
	case inst.State == StatePreempted || (inst.Interruption != nil && inst.Interruption.Kind == Preempted):
		return VerdictPreempted
	case inst.State.Gone():
		return VerdictGone
	case inst.Interruption != nil && inst.Interruption.Kind == Notice:
		return VerdictNotice
	default:
		return VerdictAlive
	}
}
