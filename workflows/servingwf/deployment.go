package servingwf

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/workflows/internal/jobwf"
)

// ServingDeployment serves one model on spot machines until it is stopped: place every
// (replica, stage) on an offering (a replica's stages spread over zones), acquire through the
// Fleet child, start one RunStage per stage from the last stage to the first, and from then
// on keep every stage ready: a lost stage is replaced on another machine and restores its KV
// cache from its successor's holder (no recompute); a noticed one migrates to a replacement
// brought up before the deadline. Stop (the update), cancellation and failure all release
// every instance (the latter two in a disconnected context). The result is the final status.
func ServingDeployment(ctx workflow.Context, in serving.DeployInput) (serving.Status, error) {
	d := newDep(ctx, in)
	if err := d.registerHandlers(ctx); err != nil {
		return d.status, err
	}
	if err := d.admit(ctx); err != nil {
		d.status.Error = err.Error()
		d.finished = true
		d.setPhase(ctx, serving.PhaseFailed)
		return d.snapshot(), err
	}
	if d.in.Carried == nil {
		d.addReplicas(d.wantReplicas)
	}
	if d.pools {
		d.addPrefill(d.spec.PrefillReplicas)
	}
	d.event(ctx, "started")
	err := d.loop(ctx)
	return d.finish(ctx, err)
}

// finish turns the loop's end into the workflow's result (jobwf.Finish); on cancel or
// failure every RunStage is retired and every instance released in a disconnected context.
func (d *dep) finish(ctx workflow.Context, err error) (serving.Status, error) {
	return jobwf.Finish(ctx, err, jobwf.End[serving.Status]{
		Snapshot: d.snapshot,
		Error:    &d.status.Error,
		Interrupt: func() {
			for _, r := range d.runs {
				d.retire(r)
			}
		},
		SetPhase:  d.setPhase,
		Cleanup:   d.cleanup,
		Done:      func() { d.finished, d.stopped = true, true },
		Releasing: serving.PhaseStopping, Cancelled: serving.PhaseStopped, Failed: serving.PhaseFailed,
	})
}

// stop is the graceful end: every RunStage is cancelled, which stops its worker (SIGTERM: it
// takes no further step, sends its holder the replication it had queued and exits; the
// router fails the requests it ran once no replacement takes them); the deployment waits for
// them up to DrainTimeout, then releases every instance.
func (d *dep) stop(ctx workflow.Context) error {
	d.setPhase(ctx, serving.PhaseStopping)
	d.event(ctx, "stopping: "+d.stopReason)
	for _, r := range d.runs {
		if !r.retired {
			r.retired = true
			r.cancel()
		}
	}
	tctx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	timer := workflow.NewTimerWithOptions(tctx, d.opts.DrainTimeout, workflow.TimerOptions{Summary: "wait for the stages to drain"})
	jobwf.AwaitRuns(ctx, timer, d.runs, nil)
	d.runs = nil
	for _, s := range d.all() {
		s.run, s.state, s.workerAddr, s.holderAddr = nil, "", "", ""
	}
	if err := d.cleanup(ctx); err != nil {
		return err
	}
	d.stopped = true
	d.setPhase(ctx, serving.PhaseStopped)
	return nil
}

// cleanup releases every held instance, then the stragglers still tagged with the
// deployment's id (a fleet interrupted mid-create); what is still listed after that leaked.
func (d *dep) cleanup(ctx workflow.Context) error {
	ids := cloud.IDs(d.held)
	if err := d.release(ctx, ids); err != nil {
		return err
	}
	for _, s := range d.all() {
		s.inst, s.standby = cloud.Instance{}, nil
	}
	stragglers, leaked, err := jobwf.ReleaseStragglers(ctx, d.id, d.release)
	if err != nil {
		return err
	}
	if len(stragglers) > 0 {
		ids = stragglers
		d.status.LeakedInstances = leaked
	}
	d.event(ctx, fmt.Sprintf("released %d instances", len(ids)))
	return nil
}

// canContinueAsNew: the history is long (the server suggests it, or the test option), and
// the deployment is steady: every stage ready, no migration (nor a machine migrated off still
// waiting for its worker to end), no failover in flight, so the
// carried state is simple and the next run only re-attaches.
func (d *dep) canContinueAsNew(ctx workflow.Context) bool {
	if !workflow.GetInfo(ctx).GetContinueAsNewSuggested() && (d.opts.ContinueAsNewAfter <= 0 || d.events < d.opts.ContinueAsNewAfter) {
		return false
	}
	for _, s := range d.all() {
		if s.state != serving.StateReady || s.standby != nil || s.fo != nil || !s.noticedAt.IsZero() || s.toSpot {
			return false
		}
	}
	for _, r := range d.runs {
		if r.releaseAtEnd != "" {
			return false // a machine migrated off is released when its worker ends
		}
	}
	return !d.stopRequested && d.wantReplicas == d.replicas() && d.prefillScaled(d.spec.PrefillReplicas)
}

// continueAsNew hands the deployment's state to a new run. The RunStage activities of this run
// end with it; the next run starts them again with Adopt, and the node side keeps the running
// workers (serving.StageAssignment.Adopt).
func (d *dep) continueAsNew(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	d.drainNotices(ctx)
	d.event(ctx, "continue as new")
	c := &serving.CarryState{Status: d.snapshot(), Instances: append([]cloud.Instance(nil), d.held...),
		OnDemandPrices: map[string]float64{}, Unavailable: d.unavailable, Avoided: d.avoided, TimeScale: d.scale, Fleets: d.fleets}
	for _, in := range d.held {
		if p, ok := d.odPrice[in.ID]; ok {
			c.OnDemandPrices[in.ID] = p
		}
	}
	for _, s := range d.all() {
		c.Slots = append(c.Slots, serving.CarriedSlot{Pool: s.pool, Replica: s.replica, Stage: s.stage, InstanceID: s.inst.ID, State: s.state,
			WorkerAddr: s.workerAddr, HolderAddr: s.holderAddr, NoticedAt: s.noticedAt,
			ReclaimAt: s.reclaimAt})
	}
	next := d.in
	next.Spec, next.Carried = d.spec, c
	return workflow.NewContinueAsNewError(ctx, serving.WorkflowServingDeployment, next)
}

// drainNotices takes the notices buffered before the run ends so none is lost: a notice
// for a held machine is carried as NoticedAt (the next run migrates it). Stage-ready reports
// still buffered are of this run's epochs and stale in the next.
func (d *dep) drainNotices(ctx workflow.Context) {
	notices := workflow.GetSignalChannel(ctx, serving.SignalPreemptionNotice)
	now := workflow.Now(ctx)
	for {
		var n serving.PreemptionNotice
		if !notices.ReceiveAsync(&n) {
			break
		}
		for _, s := range d.all() {
			if s.inst.ID == n.InstanceID && s.noticedAt.IsZero() && !d.opts.IgnoreNotices {
				s.noticedAt, s.reclaimAt = now, n.Deadline
				d.status.Notices++
			}
		}
	}
	ready := workflow.GetSignalChannel(ctx, serving.SignalStageReady)
	for ready.ReceiveAsync(nil) {
	}
}
