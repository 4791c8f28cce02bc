package trainingact

import (
	"context"

	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/policy"
	"github.com/schooner-ml/schooner/training"
)

// DecideSpot runs schooner's deadline policy for a running job (policy.DecideRunning: the
// code the policy simulator runs) with the planner's throughput of the job's model. Like
// PlanJob it is a local activity, pure computation; a bad model is final.
func (t *Control) DecideSpot(_ context.Context, req training.SpotDecisionRequest) (training.SpotDecision, error) {
	m, n, err := t.model(req.Model, req.SeqLen)
	if err != nil {
		return training.SpotDecision{}, err
	}
	d, err := policy.DecideRunning(req.Running, req.Offers, req.Memory, m, n, req.GlobalBatch)
	if err != nil {
		return training.SpotDecision{}, temporal.NewNonRetryableApplicationError(err.Error(), training.ErrTypeNoPlan, err)
	}
	return d, nil
}
