package servingwf

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/workflows/internal/jobwf"
)

// advance starts every RunStage that may start now. The start order, per replica, is from
// the last stage to the first: a stage starts once the stage after it reported stage-ready,
// so it is told that stage's worker (activations) and its node's KV-cache holder (the ring
// replica of its cache). The last stage starts first, before stage 0 is known (it, and any
// stage whose successor is replaced later, reads the current addresses from the stages
// query); replicas start in parallel. The same rule brings up replacements: a lost stage
// restarts as soon as its successor is ready, usually at once. A standby (the migration off a
// noticed machine) follows the same rule; a stage re-attached after continue-as-new (adopt)
// starts at once, being ready already.
//
// A prefill replica's stage waits, besides, for the holder it streams prompts to: the one
// the same stage of the decode replica it feeds restores from (holderSlot), on the node of that
// replica's next stage. Without it the worker would have nowhere to keep the prompt.
func (d *dep) advance(ctx workflow.Context) {
	for r := range d.replicas() {
		for st := d.depth() - 1; st >= 0; st-- {
			d.advanceSlot(ctx, d.slotAt(r, st))
		}
	}
	for p := range d.prefillReplicas() {
		for st := d.depth() - 1; st >= 0; st-- {
			d.advanceSlot(ctx, d.slotOf(serving.PoolPrefill, p, st))
		}
	}
}

// advanceSlot starts the run of s, or of its standby, if it may start now.
func (d *dep) advanceSlot(ctx workflow.Context, s *slot) {
	successorReady := s.stage == d.depth()-1 || d.next(s).state == serving.StateReady
	if s.pool == serving.PoolPrefill {
		h := d.holderSlot(s)
		successorReady = successorReady && h != nil && h.state == serving.StateReady
	}
	if s.inst.ID != "" && s.run == nil && (s.adopt || successorReady) {
		d.start(ctx, s, s.inst, false)
	}
	if s.standby != nil && s.standby.run == nil && successorReady {
		d.start(ctx, s, s.standby.inst, true)
	}
}

// StandbyPreload bounds a standby's preload of its stage's KV replicas before it reports ready
// (serving.StageAssignment.PreloadSeconds) when the notice gave no deadline: a notice leaves
// 30 s to 2 min, of which buying and starting the standby take most; a preload runs at the
// holder's copy speed, so 5 s covers gigabytes.
const StandbyPreload = 5 * time.Second

// SwitchReserve is the time a migration's switch needs before the machine is reclaimed, once
// the standby reports ready: the predecessor's and the router's next look at the stages
// (fast polls, under a second), the resubmission of the requests in flight and the restore of
// the steps decoded since the preload.
const SwitchReserve = 5 * time.Second

// standbyPreload is how long a standby started at now may preload before it must report ready:
// until SwitchReserve before the reclaim when the notice said when, and never less than
// StandbyPreload (nor StandbyPreload when it did not say). It is an upper bound: a preload
// that has fetched what there is reports ready at once, so the bound binds only on a slow or
// hung holder. The floor keeps the preload where little is left: a standby that skipped it
// restored everything at the switch, where a clean-clone CI run (simulated market at 20×,
// whose 2-minute boot spends the whole notice) once found nothing to restore and re-prefilled.
func standbyPreload(reclaimAt, now time.Time) time.Duration {
	if reclaimAt.IsZero() {
		return StandbyPreload
	}
	return max(reclaimAt.Sub(now)-SwitchReserve, StandbyPreload)
}

// start runs RunStage for slot s on inst, under a new epoch.
func (d *dep) start(ctx workflow.Context, s *slot, inst cloud.Instance, isStandby bool) {
	d.status.Epoch++
	epoch := d.status.Epoch
	a := serving.StageAssignment{Deployment: d.id, InstanceID: inst.ID, Pool: s.pool, Replica: s.replica, Stage: s.stage, Depth: d.depth(),
		Layers: d.layers[s.stage], Model: d.spec.Model.Dims(), MaxBatch: d.spec.MaxBatch, MaxContext: d.spec.MaxContext,
		Replication: d.spec.KVReplication == serving.ReplicationOn, KVSwapGiB: d.spec.KVSwapGiB, Epoch: epoch,
		Restore: s.restore || isStandby, Adopt: s.adopt && !isStandby, TimeScale: float64(d.scale)}
	if n := d.next(s); n != nil && n != s && n.state == serving.StateReady {
		a.NextHolderAddr, a.NextWorkerAddr = n.holderAddr, n.workerAddr
	}
	if s.pool == serving.PoolPrefill {
		// Its prompts go where the decode replica it feeds restores them from, not to its own
		// ring (advance started it only once that holder was known).
		a.NextHolderAddr = ""
		if h := d.holderSlot(s); h != nil && h.state == serving.StateReady {
			a.NextHolderAddr = h.holderAddr
		}
	}
	// A prefill stage keeps no request beyond its prompt's hand-off: nothing to preload, and
	// the replicas under its (deployment, stage) at that holder are the decode stage's.
	if isStandby && a.Replication && s.pool != serving.PoolPrefill {
		a.PreloadSeconds = standbyPreload(s.reclaimAt, workflow.Now(ctx)).Seconds()
	}
	rctx, cancel := workflow.WithCancel(ctx)
	what := "start"
	switch {
	case a.Adopt:
		what = "re-attach"
	case isStandby:
		what = "migrate"
	case a.Restore:
		what = "restore"
	}
	actx := workflow.WithActivityOptions(rctx, workflow.ActivityOptions{
		TaskQueue: taskqueue.Node(inst.ID), StartToCloseTimeout: 30 * 24 * time.Hour,
		ScheduleToStartTimeout: d.opts.ScheduleToStartTimeout, HeartbeatTimeout: d.opts.HeartbeatTimeout,
		WaitForCancellation: true, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary: fmt.Sprintf("%s %s/%d (layers %d-%d) on %s, epoch %d",
			what, s.name(), d.depth(), a.Layers.First, a.Layers.End-1, inst.ID, epoch),
	})
	run := &stageRun{slot: s, epoch: epoch, instanceID: inst.ID, cancel: cancel, startedAt: workflow.Now(ctx), standby: isStandby,
		Run: jobwf.Run[serving.StageResult]{Future: workflow.ExecuteActivity(actx, serving.ActivityRunStage, a)}}
	d.runs = append(d.runs, run)
	if isStandby {
		s.standby.run = run
	} else {
		s.run = run
		s.restore, s.adopt = true, false
		if s.state != serving.StateReady {
			s.state = serving.StateStarting
		}
	}
	d.event(ctx, fmt.Sprintf("%s %s on %s, epoch %d", what, s.name(), inst.ID, epoch))
}

// retire cancels a run whose end no longer matters (replaced, scaled away, stopped).
func (d *dep) retire(r *stageRun) {
	if r == nil || r.retired {
		return
	}
	r.retired = true
	r.cancel()
}
