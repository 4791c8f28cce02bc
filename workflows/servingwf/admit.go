package servingwf

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/workflows/internal/jobwf"
)

// admit is the deployment's door, the same for every entry point (schooner serve deploy, the
// plain temporal CLI, a program): it applies the spec's defaults and validates it, failing
// at once and for good with every bad field named, before anything is bought. Then it
// resolves, once, the provider's time scale, which the rest of the deployment takes as given.
func (d *dep) admit(ctx workflow.Context) error {
	if d.in.Carried == nil {
		d.spec = d.spec.WithDefaults()
		// Validate lists the built-in model names through slices.Sorted(maps.Keys(...)):
		// sorted, so the message does not depend on map order.
		//workflowcheck:ignore the keys are sorted
		if err := d.spec.Validate(); err != nil {
			return invalidSpec(err.Error(), serving.Problems(err))
		}
		d.wantReplicas = d.spec.Replicas
	} else {
		d.wantReplicas = d.status.Replicas
	}
	d.status.Name, d.status.Model = d.spec.Name, d.spec.ModelID()
	d.layers = serving.SplitLayers(d.spec.Model.Dims().Layers, d.spec.Stages)
	d.admitPools(ctx)
	if d.scale <= 0 {
		scale, err := jobwf.TimeScale(ctx)
		if err != nil {
			return fmt.Errorf("asking the provider for its time scale: %w", err)
		}
		d.scale = scale
	}
	return nil
}

// invalidSpec is the final error of a deployment refused at the door.
func invalidSpec(msg string, problems []serving.FieldError) error {
	return temporal.NewNonRetryableApplicationError(msg, serving.ErrTypeInvalidSpec, nil, problems)
}
