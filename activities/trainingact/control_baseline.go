package trainingact

import (
	"context"
	"fmt"

	"github.com/schooner-ml/schooner/training"
)

// BestOnDemand is the job run start to end on its best on-demand plan: planned exactly as the
// job's own PlanJob plans, with spot left out, over the offerings the job found at its start,
// and priced at their on-demand prices with nothing lost to preemptions. A local activity,
// pure computation like PlanJob, whose errors (no on-demand plan, a cap no plan meets) it
// passes on as they are. The job keeps the answer in its status; `schooner demo` and the
// report compare the job's cost with it.
func (t *Control) BestOnDemand(ctx context.Context, req training.BestOnDemandRequest) (training.OnDemandBaseline, error) {
	res, err := t.PlanJob(ctx, req.PlanRequest())
	if err != nil {
		return training.OnDemandBaseline{}, err
	}
	e := res.Estimate
	return training.OnDemandBaseline{
		CostUSD:     float64(req.Iterations) * e.IterTime / 3600 * e.USDPerHour,
		Plan:        fmt.Sprintf("%s, %.3f s/iter, $%.2f/h", res.Summary, e.IterTime, e.USDPerHour),
		IterSeconds: e.IterTime, USDPerHour: e.USDPerHour,
	}, nil
}
