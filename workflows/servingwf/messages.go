package servingwf

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/serving"
)

// registerHandlers installs the queries and the updates. Signals are read by the main loop
// from their channels, so none is lost while the deployment acquires.
func (d *dep) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, serving.QueryStatus, func() (serving.Status, error) { return d.snapshot(), nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, serving.QueryStages, func() (serving.Pipeline, error) { return d.pipeline(), nil }); err != nil {
		return err
	}
	scale := func(ctx workflow.Context, req serving.ScaleRequest) (serving.Status, error) {
		want, wantPrefill := d.wantReplicas, d.spec.PrefillReplicas
		if req.Replicas > 0 {
			want = req.Replicas
		}
		if req.PrefillReplicas != nil {
			wantPrefill = *req.PrefillReplicas
			if wantPrefill > 0 && !d.pools {
				// A deployment started without a prefill pool lays one out from here on.
				d.pools = workflow.GetVersion(ctx, poolsVersion, workflow.DefaultVersion, 1) == 1
			}
			if !d.pools {
				wantPrefill = d.spec.PrefillReplicas // replayed from before the pools: as it ran then
			}
		}
		d.wantReplicas, d.spec.PrefillReplicas = want, wantPrefill
		d.wake.SendAsync(true)
		err := workflow.Await(ctx, func() bool {
			return d.replicas() == want && d.prefillScaled(wantPrefill) ||
				d.wantReplicas != want || d.spec.PrefillReplicas != wantPrefill || d.finished
		})
		return d.snapshot(), err
	}
	err := workflow.SetUpdateHandlerWithOptions(ctx, serving.UpdateScale, scale, workflow.UpdateHandlerOptions{
		Validator: func(_ workflow.Context, req serving.ScaleRequest) error {
			if err := d.validScale(req); err != nil {
				return err
			}
			return d.accepting()
		}})
	if err != nil {
		return err
	}
	stop := func(ctx workflow.Context, req serving.StopRequest) (serving.Status, error) {
		d.stopRequested, d.stopReason = true, req.Reason
		if d.stopReason == "" {
			d.stopReason = "stop requested"
		}
		d.wake.SendAsync(true)
		err := workflow.Await(ctx, func() bool { return d.stopped || d.finished })
		return d.snapshot(), err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, serving.UpdateStop, stop, workflow.UpdateHandlerOptions{
		Validator: func(workflow.Context, serving.StopRequest) error { return d.accepting() }})
}

// validScale checks a scale update before it is accepted: each count in bounds, at least one
// given, and a prefill pool only where prompts can be streamed (KV replication on).
func (d *dep) validScale(req serving.ScaleRequest) error {
	if req.PrefillReplicas == nil || req.Replicas != 0 {
		if req.Replicas < 1 || req.Replicas > serving.MaxReplicas {
			return fmt.Errorf("replicas must be between 1 and %d (got %d)", serving.MaxReplicas, req.Replicas)
		}
	}
	if req.PrefillReplicas == nil {
		return nil
	}
	if ps := serving.PrefillReplicasProblems(*req.PrefillReplicas, d.spec.KVReplication); len(ps) > 0 {
		return fmt.Errorf("prefill_replicas %s", ps[0])
	}
	return nil
}

// prefillScaled: the prefill pool has the replicas wanted (a deployment without pools has none
// to lay out).
func (d *dep) prefillScaled(want int) bool { return !d.pools || d.prefillReplicas() == want }

// accepting rejects updates to a deployment that is over or stopping.
func (d *dep) accepting() error {
	switch {
	case d.finished:
		return fmt.Errorf("the deployment is %s", d.status.Phase)
	case d.stopRequested:
		return errors.New("the deployment is stopping")
	}
	return nil
}
