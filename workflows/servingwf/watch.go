package servingwf

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/workflows/internal/jobwf"
)

// loop keeps the deployment serving until it is stopped: each turn it applies a scale
// request, gives every slot a machine, starts what may start, then waits for one thing to
// happen: a RunStage ending, a stage-ready report, a preemption notice, the poll timer, the
// capacity retry timer or an update handler's wake-up.
func (d *dep) loop(ctx workflow.Context) error {
	readyCh := workflow.GetSignalChannel(ctx, serving.SignalStageReady)
	noticeCh := workflow.GetSignalChannel(ctx, serving.SignalPreemptionNotice)
	tctx, stopTimers := workflow.WithCancel(ctx)
	defer stopTimers()
	var poll, retry workflow.Future
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.stopRequested {
			stopTimers()
			return d.stop(ctx)
		}
		if err := d.applyScale(ctx); err != nil {
			return err
		}
		if err := d.ensure(ctx); err != nil {
			return err
		}
		d.advance(ctx)
		d.updatePhase(ctx)
		if poll == nil {
			poll = workflow.NewTimerWithOptions(tctx, d.opts.PollInterval, workflow.TimerOptions{Summary: "poll instances"})
		}
		if d.short && retry == nil {
			wait := max(d.nextTry.Sub(workflow.Now(ctx)), time.Second)
			retry = workflow.NewTimerWithOptions(tctx, wait, workflow.TimerOptions{Summary: "wait for capacity"})
		}

		var ended *stageRun
		var ready *serving.StageReady
		var notice *serving.PreemptionNotice
		polled := false
		sel := workflow.NewSelector(ctx)
		for _, r := range d.runs {
			r.Watch(ctx, sel, func() { ended = r })
		}
		jobwf.Receive(ctx, sel, readyCh, &ready)
		jobwf.Receive(ctx, sel, noticeCh, &notice)
		sel.AddReceive(d.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.AddFuture(poll, func(workflow.Future) { polled, poll = true, nil })
		if retry != nil {
			sel.AddFuture(retry, func(workflow.Future) { retry = nil })
		}
		sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
		sel.Select(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}

		var err error
		switch {
		case ended != nil:
			err = d.onRunEnded(ctx, ended)
		case ready != nil:
			err = d.onReady(ctx, *ready)
		case notice != nil:
			err = d.onNotice(ctx, *notice)
		case polled:
			if err = d.onPoll(ctx); err == nil && d.canContinueAsNew(ctx) {
				return d.continueAsNew(ctx)
			}
		}
		if err != nil {
			return err
		}
		live := d.runs[:0]
		for _, r := range d.runs {
			if !r.Done {
				live = append(live, r)
			}
		}
		d.runs = live
	}
}

// updatePhase derives the phase from the slots: serving when every stage is ready (a
// migration off a noticed machine does not interrupt it), recovering while a stage that
// served is being replaced, acquiring or starting before the deployment first served.
func (d *dep) updatePhase(ctx workflow.Context) {
	switch d.status.Phase {
	case serving.PhaseStopping, serving.PhaseStopped, serving.PhaseFailed:
		return
	}
	all, recovering, lacking := len(d.slots) > 0, false, false
	for _, s := range d.all() {
		if s.state != serving.StateReady {
			all = false
			recovering = recovering || s.served
		}
		lacking = lacking || s.inst.ID == ""
	}
	switch {
	case all:
		d.served = true
		d.setPhase(ctx, serving.PhaseServing)
	case recovering:
		d.setPhase(ctx, serving.PhaseRecovering)
	case lacking && !d.served:
		d.setPhase(ctx, serving.PhaseAcquiring)
	default:
		d.setPhase(ctx, serving.PhaseStarting)
	}
}

// onReady takes a stage-ready report. A report of the slot's current run makes the stage
// ready (and ends a failover in progress); one of its standby switches the stage over to the
// standby, then releases the noticed machine. Reports of older epochs are stale.
func (d *dep) onReady(ctx workflow.Context, m serving.StageReady) error {
	s := d.slotOf(m.Pool, m.Replica, m.Stage)
	if s == nil {
		return nil
	}
	now := workflow.Now(ctx)
	if s.run != nil && s.run.epoch == m.Epoch && s.inst.ID == m.InstanceID {
		s.state, s.workerAddr, s.holderAddr, s.restarts, s.served = serving.StateReady, m.WorkerAddr, m.HolderAddr, 0, true
		d.version++
		d.completeFailover(s, now)
		d.event(ctx, fmt.Sprintf("replica %d stage %d ready on %s (epoch %d)", s.replica, s.stage, s.inst.ID, m.Epoch))
		return nil
	}
	sb := s.standby
	if sb == nil || sb.run == nil || sb.run.epoch != m.Epoch || sb.inst.ID != m.InstanceID {
		return nil
	}
	old, oldRun := s.inst, s.run
	d.retire(oldRun)
	s.inst, s.run, s.standby = sb.inst, sb.run, nil
	s.run.standby = false
	s.state, s.workerAddr, s.holderAddr, s.restarts, s.served = serving.StateReady, m.WorkerAddr, m.HolderAddr, 0, true
	s.noticedAt, s.reclaimAt = time.Time{}, time.Time{}
	if s.toSpot {
		s.toSpot = false
		d.status.SpotReturns++
	}
	d.version++
	d.completeFailover(s, now)
	d.event(ctx, fmt.Sprintf("replica %d stage %d migrated from %s to %s", s.replica, s.stage, old.ID, s.inst.ID))
	if old.ID == "" {
		return nil
	}
	if oldRun != nil && !oldRun.Done && workflow.GetVersion(ctx, handoverVersion, workflow.DefaultVersion, 1) == 1 {
		// The noticed machine goes once its worker has exited: stopped, it first sends the
		// holder what it still had queued, which the replacement's restore waits for.
		oldRun.releaseAtEnd = old.ID
		return nil
	}
	return d.release(ctx, []string{old.ID})
}

// handoverVersion gates releasing a machine a stage migrated off only once its worker has
// ended (its replication flushed), not at the switch.
const handoverVersion = "release-after-handover"

// completeFailover records the failover in progress of s, now that its replacement is ready.
func (d *dep) completeFailover(s *slot, now time.Time) {
	fo := s.fo
	if fo == nil {
		return
	}
	fo.To, fo.ReadyAt, fo.Seconds = s.inst.ID, now, now.Sub(fo.At).Seconds()
	if !s.downSince.IsZero() {
		fo.DowntimeSeconds = now.Sub(s.downSince).Seconds()
	}
	d.status.Failovers++
	d.status.FailoverRecords = append(d.status.FailoverRecords, *fo)
	if n := len(d.status.FailoverRecords); n > serving.MaxFailoverRecords {
		d.status.FailoverRecords = d.status.FailoverRecords[n-serving.MaxFailoverRecords:]
	}
	s.fo, s.downSince = nil, time.Time{}
}

// onRunEnded handles a RunStage that ended on its own. A standby's end gives the standby up
// (another is bought while the notice stands). A stage's end is confirmed with the provider:
// a lost machine is replaced; on a live one the worker is restarted in place, restoring its
// cache, until MaxStageRestarts failures in a row (or a task no node agent picked up) call
// for another machine.
func (d *dep) onRunEnded(ctx workflow.Context, r *stageRun) error {
	if r.retired {
		if id := r.releaseAtEnd; id != "" {
			r.releaseAtEnd = ""
			return d.release(ctx, []string{id})
		}
		return nil
	}
	s := r.slot
	if r.standby {
		if s.standby == nil || s.standby.run != r {
			return nil
		}
		return d.dropStandby(ctx, s, fmt.Sprintf("its stage ended: %v", r.Err))
	}
	if s.run != r {
		return nil
	}
	s.run = nil
	v, err := d.verdict(ctx, r.instanceID)
	if err != nil {
		return err
	}
	if v.Lost() {
		return d.onLost(ctx, s, lossOf(v))
	}
	var timeout *temporal.TimeoutError
	stuck := errors.As(r.Err, &timeout) && timeout.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START
	s.restarts++
	if stuck || s.restarts > d.opts.MaxStageRestarts {
		return d.onLost(ctx, s, lossReplaced)
	}
	if s.state == serving.StateReady {
		d.version++
	}
	s.state, s.workerAddr, s.holderAddr = "", "", ""
	d.event(ctx, fmt.Sprintf("replica %d stage %d ended on live %s (%v): restarting it there", s.replica, s.stage, s.instID(), r.Err))
	return nil
}

// instID is the slot's machine id, for messages.
func (s *slot) instID() string { return s.inst.ID }

// loss says why a stage's machine is given up.
type loss int

const (
	lossPreempted loss = iota // the provider reclaimed it
	lossGone                  // terminated or unknown to the provider
	lossReplaced              // alive, but stuck or failing: replaced
	lossNoticed               // noticed before its stage was ready: replaced at once
)

func lossOf(v cloud.Verdict) loss {
	if v == cloud.VerdictPreempted {
		return lossPreempted
	}
	return lossGone
}

// onLost gives up the machine of s: its run is retired, the machine released (a no-op for a
// preempted one), the zone avoided after a preemption, and the slot left without a machine,
// so the next turn buys a replacement (unless a standby is already coming up) and starts it
// with restore. A stage that served gets a failover record, completed when the replacement
// reports ready.
func (d *dep) onLost(ctx workflow.Context, s *slot, why loss) error {
	now := workflow.Now(ctx)
	old := s.inst
	d.retire(s.run)
	s.run = nil
	switch why {
	case lossPreempted:
		d.status.Preemptions++
		d.avoidZone(old.Zone, now)
	case lossGone, lossReplaced:
		d.status.LostInstances++
	}
	if s.served && s.fo == nil {
		s.fo = &serving.Failover{At: now, Pool: s.pool, Replica: s.replica, Stage: s.stage, From: old.ID}
	}
	if s.state == serving.StateReady {
		s.downSince = now
		d.version++
	}
	s.inst, s.state, s.workerAddr, s.holderAddr = cloud.Instance{}, serving.StateLost, "", ""
	s.restarts, s.noticedAt, s.reclaimAt, s.restore, s.toSpot = 0, time.Time{}, time.Time{}, true, false
	d.event(ctx, fmt.Sprintf("replica %d stage %d lost %s (%s)", s.replica, s.stage, old.ID, []string{"preempted", "gone", "replaced", "noticed"}[why]))
	if old.ID == "" {
		return nil
	}
	return d.release(ctx, []string{old.ID})
}

// onNotice takes a preemption-notice signal. A notice (Kind notice) for a serving stage's
// machine starts a migration: a standby is bought at once (outside the noticed zone),
// started with restore, and switched to when ready; only then is the noticed machine
// released. A "preempted" report is confirmed with the provider before it is acted on.
func (d *dep) onNotice(ctx workflow.Context, n serving.PreemptionNotice) error {
	if n.Kind != cloud.Notice {
		return d.confirm(ctx, []string{n.InstanceID})
	}
	for _, s := range d.all() {
		if s.standby != nil && s.standby.inst.ID == n.InstanceID {
			d.status.Notices++
			d.avoidZone(s.standby.inst.Zone, workflow.Now(ctx))
			return d.dropStandby(ctx, s, "it got a preemption notice")
		}
		if s.inst.ID == n.InstanceID {
			return d.noticed(ctx, s, n.Deadline)
		}
	}
	return nil
}

// noticed marks the machine of s as about to be reclaimed at reclaimAt (wall time; zero when
// unknown), unless the deployment ignores notices: then only the loss is acted on.
func (d *dep) noticed(ctx workflow.Context, s *slot, reclaimAt time.Time) error {
	if !s.noticedAt.IsZero() || d.opts.IgnoreNotices {
		return nil
	}
	now := workflow.Now(ctx)
	s.toSpot = false // the move becomes the notice's migration
	d.status.Notices++
	d.avoidZone(s.inst.Zone, now)
	if s.state != serving.StateReady {
		// Nothing serves there yet: replace it at once rather than migrate.
		return d.onLost(ctx, s, lossNoticed)
	}
	s.noticedAt, s.reclaimAt = now, reclaimAt
	if s.fo == nil {
		s.fo = &serving.Failover{At: now, Pool: s.pool, Replica: s.replica, Stage: s.stage, Notice: true, From: s.inst.ID}
	}
	d.event(ctx, fmt.Sprintf("preemption notice for %s (replica %d stage %d): migrating", s.inst.ID, s.replica, s.stage))
	return nil
}

// dropStandby gives up the standby of s and releases its machine.
func (d *dep) dropStandby(ctx workflow.Context, s *slot, why string) error {
	sb := s.standby
	s.standby, s.toSpot = nil, false
	d.retire(sb.run)
	d.event(ctx, fmt.Sprintf("standby %s of replica %d stage %d given up: %s", sb.inst.ID, s.replica, s.stage, why))
	return d.release(ctx, []string{sb.inst.ID})
}

// avoidZone leaves zone out of spot placement for AvoidZoneTTL (provider time).
func (d *dep) avoidZone(zone string, now time.Time) {
	if zone != "" {
		d.avoided.Add(cloud.OfferingKey{Zone: zone}, now.Add(d.scale.Wall(d.opts.AvoidZoneTTL)))
	}
}

// onPoll describes every held machine, to catch losses and notices no signal reported, and
// gives up stages that started but never reported ready.
func (d *dep) onPoll(ctx workflow.Context) error {
	d.event(ctx, "")
	ids := cloud.IDs(d.held)
	if err := d.confirm(ctx, ids); err != nil {
		return err
	}
	now := workflow.Now(ctx)
	d.lookForSpot(ctx, now)
	for _, s := range d.all() {
		if r := s.run; r != nil && s.state == serving.StateStarting && now.Sub(r.startedAt) > d.opts.StageReadyTimeout {
			d.retire(r)
			s.run = nil
			s.restarts++
			if s.restarts > d.opts.MaxStageRestarts {
				if err := d.onLost(ctx, s, lossReplaced); err != nil {
					return err
				}
				continue
			}
			s.state = ""
			d.event(ctx, fmt.Sprintf("replica %d stage %d not ready after %s: restarting it", s.replica, s.stage, d.opts.StageReadyTimeout))
		}
		if sb := s.standby; sb != nil && sb.run != nil && now.Sub(sb.run.startedAt) > d.opts.StageReadyTimeout {
			if err := d.dropStandby(ctx, s, "not ready in time"); err != nil {
				return err
			}
		}
	}
	return nil
}

// confirm asks the provider about machines and acts on its word (cloud.VerdictOf): a lost
// machine is replaced (or its standby given up), a noticed one migrated.
func (d *dep) confirm(ctx workflow.Context, ids []string) error {
	got, err := d.describe(ctx, ids)
	if err != nil {
		return err
	}
	d.noteDescribed(ctx, got)
	for _, in := range got {
		v := cloud.VerdictOf(in)
		if v == cloud.VerdictAlive {
			continue
		}
		for _, s := range d.all() {
			switch {
			case s.inst.ID == in.ID && v.Lost():
				if err := d.onLost(ctx, s, lossOf(v)); err != nil {
					return err
				}
			case s.inst.ID == in.ID && v == cloud.VerdictNotice:
				// The description's deadline is on the provider's clock, not the workflow's.
				if err := d.noticed(ctx, s, time.Time{}); err != nil {
					return err
				}
			case s.standby != nil && s.standby.inst.ID == in.ID:
				if v == cloud.VerdictPreempted || v == cloud.VerdictNotice {
					d.avoidZone(in.Zone, workflow.Now(ctx))
				}
				if err := d.dropStandby(ctx, s, "the provider says "+string(v)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// verdict is the provider's word on one machine.
func (d *dep) verdict(ctx workflow.Context, id string) (cloud.Verdict, error) {
	got, err := d.describe(ctx, []string{id})
	if err != nil {
		return "", err
	}
	for _, in := range got {
		if in.ID == id {
			return cloud.VerdictOf(in), nil
		}
	}
	return cloud.VerdictGone, nil
}

// describe runs DescribeInstances (an id the provider no longer knows comes back terminated).
func (d *dep) describe(ctx workflow.Context, ids []string) ([]cloud.Instance, error) {
	return jobwf.Describe(ctx, d.id, ids)
}

// applyScale lays out or removes replicas of either pool to match the scale update: new
// replicas are placed and started by the next turns; removed ones (the highest) are stopped
// and their machines released.
func (d *dep) applyScale(ctx workflow.Context) error {
	var ids []string
	if have := d.replicas(); d.wantReplicas != have {
		if d.wantReplicas > have {
			d.addReplicas(d.wantReplicas)
		} else {
			ids = append(ids, d.retireSlots(d.slots[d.wantReplicas*d.depth():])...)
			d.slots = d.slots[:d.wantReplicas*d.depth()]
		}
		d.version++
		d.event(ctx, fmt.Sprintf("scaled from %d to %d replicas", have, d.wantReplicas))
	}
	if have, want := d.prefillReplicas(), d.spec.PrefillReplicas; d.pools && want != have {
		if want > have {
			d.addPrefill(want)
		} else {
			ids = append(ids, d.retireSlots(d.prefill[want*d.depth():])...)
			d.prefill = d.prefill[:want*d.depth()]
		}
		d.version++
		d.event(ctx, fmt.Sprintf("scaled the prefill pool from %d to %d replicas", have, want))
	}
	if len(ids) == 0 {
		return nil
	}
	return d.release(ctx, ids)
}

// retireSlots stops the workers of slots leaving the deployment (and their standbys') and
// returns the machines to release.
func (d *dep) retireSlots(slots []*slot) []string {
	var ids []string
	for _, s := range slots {
		d.retire(s.run)
		if s.inst.ID != "" {
			ids = append(ids, s.inst.ID)
		}
		if s.standby != nil {
			d.retire(s.standby.run)
			ids = append(ids, s.standby.inst.ID)
		}
	}
	return ids
}
