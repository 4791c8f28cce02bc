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
		d.wantReplicas = req.Replicas
		d.wake.SendAsync(true)
		err := workflow.Await(ctx, func() bool { return d.replicas() == req.Replicas || d.wantReplicas != req.Replicas || d.finished })
		return d.snapshot(), err
	}
	err := workflow.SetUpdateHandlerWithOptions(ctx, serving.UpdateScale, scale, workflow.UpdateHandlerOptions{
		Validator: func(_ workflow.Context, req serving.ScaleRequest) error {
			if req.Replicas < 1 || req.Replicas > serving.MaxReplicas {
				return fmt.Errorf("replicas must be between 1 and %d (got %d)", serving.MaxReplicas, req.Replicas)
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
