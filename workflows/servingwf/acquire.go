package servingwf

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/workflows/internal/jobwf"
)

// need is a machine a slot lacks: its own (none assigned) or a standby (its machine got a
// preemption notice, or it moves back to spot).
type need struct {
	slot    *slot
	standby bool
}

// prefillNearVersion gates placing each prefill stage in the zone of the decode stage it
// streams its prompts to (serving.PlacementRequest.DecodeReplicas).
const prefillNearVersion = "prefill-near-decode"

// needs lists the machines to buy, in slot order.
func (d *dep) needs() []need {
	var out []need
	for _, s := range d.all() {
		switch {
		case s.inst.ID == "" && s.standby == nil:
			out = append(out, need{slot: s})
		case s.inst.ID != "" && (!s.noticedAt.IsZero() || s.toSpot) && s.standby == nil:
			out = append(out, need{slot: s, standby: true})
		}
	}
	return out
}

// ensure gives every slot a machine: offerings → placement (spreading each replica's stages
// over zones, leaving out short offerings and avoided zones) → the Fleet child → assign what
// came to the slots. A short round marks the offerings unavailable and places again, up to
// MaxAcquireRounds; then the deployment waits RetryWait (short) and the main loop tries
// again, while the stages that have machines go on.
func (d *dep) ensure(ctx workflow.Context) error {
	if len(d.needs()) == 0 {
		d.short = false
		return nil
	}
	if d.short && workflow.Now(ctx).Before(d.nextTry) {
		return nil
	}
	for round := 0; round < d.opts.MaxAcquireRounds; round++ {
		needs := d.needs()
		if len(needs) == 0 {
			d.short = false
			return nil
		}
		offers, err := d.offerings(ctx)
		if err != nil {
			return err
		}
		now := workflow.Now(ctx)
		d.unavailable.Prune(now)
		d.avoided.Prune(now)
		req := serving.PlacementRequest{Offers: offers, Spot: d.spec.Spot, GPUTypes: d.spec.Resources.GPUTypes,
			Unavailable: d.unavailable, Avoided: d.avoided, Now: now}
		if d.prefillReplicas() > 0 && workflow.GetVersion(ctx, prefillNearVersion, workflow.DefaultVersion, 1) == 1 {
			req.DecodeReplicas, req.Depth = d.replicas(), d.depth()
		}
		for _, n := range needs {
			req.Need = append(req.Need, n.slot.key())
			if n.slot.toSpot {
				req.SpotOnly = append(req.SpotOnly, n.slot.key())
			}
		}
		for _, s := range d.all() {
			if s.inst.ID != "" && s.noticedAt.IsZero() {
				req.Held = append(req.Held, serving.ZoneUse{Slot: s.key(), Zone: s.inst.Zone})
			}
			if s.standby != nil {
				req.Held = append(req.Held, serving.ZoneUse{Slot: s.key(), Zone: s.standby.inst.Zone})
			}
		}
		p := serving.Place(req)
		d.noSpotToReturnTo(ctx, p.Unplaced)
		if len(p.Stages) == 0 {
			break
		}
		if !d.served {
			d.setPhase(ctx, serving.PhaseAcquiring)
		}
		got, err := d.fleet(ctx, p.Groups())
		if err != nil {
			return err
		}
		if err := d.take(ctx, p, got, needs); err != nil {
			return err
		}
	}
	var short []serving.Slot
	for _, n := range d.needs() {
		short = append(short, n.slot.key())
	}
	d.noSpotToReturnTo(ctx, short)
	if n := len(d.needs()); n > 0 {
		d.short = true
		d.nextTry = workflow.Now(ctx).Add(d.opts.RetryWait)
		d.status.Error = fmt.Sprintf("%d stages wait for capacity", n)
		d.event(ctx, d.status.Error)
		return nil
	}
	d.short, d.status.Error = false, ""
	return nil
}

// noSpotToReturnTo gives up the move back to spot of the slots among unplaced: no spot room
// now (the next check is SpotReturnEvery later). They keep their on-demand machines.
func (d *dep) noSpotToReturnTo(ctx workflow.Context, unplaced []serving.Slot) {
	for _, u := range unplaced {
		if s := d.slotOf(u.Pool, u.Replica, u.Stage); s != nil && s.toSpot && s.standby == nil {
			s.toSpot = false
			d.event(ctx, fmt.Sprintf("replica %d stage %d stays on demand: no spot room", s.replica, s.stage))
		}
	}
}

// offerings asks what the deployment may buy now (fresh capacity hints every round).
func (d *dep) offerings(ctx workflow.Context) ([]cloud.Offering, error) {
	var offers []cloud.Offering
	err := workflow.ExecuteActivity(jobwf.ControlCtx(ctx, "list offerings for "+d.spec.Name, time.Minute),
		serving.ActivityOfferings, serving.OfferingsRequest{Resources: d.spec.Resources}).Get(ctx, &offers)
	if err != nil {
		return nil, fmt.Errorf("listing offerings: %w", err)
	}
	return offers, nil
}

// fleet runs the Fleet child workflow for the groups.
func (d *dep) fleet(ctx workflow.Context, groups []fleet.Group) (fleet.Result, error) {
	d.fleets++
	token := fmt.Sprintf("%s-%s-%d", d.id, workflow.GetInfo(ctx).WorkflowExecution.RunID, d.fleets)
	return jobwf.Fleet(ctx, fmt.Sprintf("%s-fleet-%d", d.id, d.fleets), fleet.Input{JobID: d.id, Groups: groups, Token: token,
		Tags: map[string]string{"schooner-kind": "serving"}})
}

// take assigns what the fleet got to the needs it was bought for (by offering key, in
// placement order), marks the short offerings unavailable and releases anything left over.
func (d *dep) take(ctx workflow.Context, p serving.Placement, got fleet.Result, needs []need) error {
	now := workflow.Now(ctx)
	used := make([]bool, len(got.Instances))
	for _, sp := range p.Stages {
		i := slices.IndexFunc(needs, func(n need) bool { return n.slot.key() == sp.Slot })
		if i < 0 {
			continue
		}
		n := needs[i]
		for k, in := range got.Instances {
			if used[k] || in.Zone != sp.Key.Zone || in.InstanceType != sp.Key.InstanceType || capOf(in) != sp.Key.Capacity {
				continue
			}
			used[k] = true
			d.held = append(d.held, in)
			d.odPrice[in.ID] = sp.OnDemandPrice
			if n.standby {
				n.slot.standby = &standby{inst: in}
			} else {
				n.slot.inst = in
			}
			break
		}
	}
	for _, k := range got.Unavailable {
		d.unavailable.Add(k, now.Add(d.scale.Wall(d.opts.UnavailableTTL)))
	}
	var extra []string
	for k, in := range got.Instances {
		if !used[k] {
			extra = append(extra, in.ID)
		}
	}
	d.event(ctx, fmt.Sprintf("acquired %d instances (%d short)", len(got.Instances)-len(extra), got.Short))
	if len(extra) > 0 {
		d.held = append(d.held, instancesByID(got.Instances, extra)...)
		return d.release(ctx, extra)
	}
	return nil
}

// instancesByID picks the instances with the given ids, in order.
func instancesByID(all []cloud.Instance, ids []string) []cloud.Instance {
	var out []cloud.Instance
	for _, in := range all {
		if slices.Contains(ids, in.ID) {
			out = append(out, in)
		}
	}
	return out
}

// release runs ReleaseInstances (idempotent, retried) and forgets the instances.
func (d *dep) release(ctx workflow.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if err := jobwf.Release(ctx, d.id, ids); err != nil {
		return err
	}
	d.accrue(workflow.Now(ctx))
	d.drop(ids...)
	return nil
}

// capOf is the instance's capacity type, spot when unset.
func capOf(in cloud.Instance) cloud.CapacityType {
	if in.Capacity == "" {
		return cloud.Spot
	}
	return in.Capacity
}
