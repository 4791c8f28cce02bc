package trainingact

import (
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/bridge"
	"github.com/schooner-ml/schooner/training"
)

// feasibleCap bounds the GPU count the feasibility check plans with: a job without a GPU cap
// (or a larger one) is never declared infeasible, since planning thousands of GPUs per offering
// would take long and such a job is rarely short of memory.
const feasibleCap = 64

// infeasible tells a job that waits for capacity in vain from one that merely met a drought:
// when planning on the capacity on offer found nothing, it plans again as if every offering
// the spec allows had max_gpus GPUs free, one offering at a time (a plan of one GPU type in one
// zone needs no more memory than a mixed one of the same size). If none admits a plan, no
// capacity the market could return would help, and the job fails at once with the planner's
// reason instead of waiting for hours.
//
// It looks at every offering the spec allows (PlanJobRequest.AllOffers, else Offers): the
// offers of one round leave out offerings that are short or in a zone that just preempted,
// which is a drought, not a verdict. When no offering could be tried at all (each larger than
// max_gpus, or without an on-demand price) it cannot tell, and says nothing.
func (t *Control) infeasible(req training.PlanJobRequest, preq planner.Request, cause error) error {
	offers := req.AllOffers
	if len(offers) == 0 {
		offers = req.Offers
	}
	if req.MaxGPUs <= 0 || req.MaxGPUs > feasibleCap || len(offers) == 0 {
		return nil
	}
	tried := 0
	for _, o := range offers {
		per := max(o.GPUsPerInstance, 1)
		if req.MaxGPUs < per {
			continue // not one instance of it fits under the cap
		}
		ample := o
		ample.SpotCapacity = -1 // unknown: the pool takes AssumeInstances
		pools := bridge.OfferPools([]cloud.Offering{ample}, bridge.Pricing{OnDemand: true, AssumeInstances: req.MaxGPUs / per})
		if len(pools) == 0 {
			continue
		}
		tried++
		p := preq
		p.Pools = pools
		p.MaxUSDPerIteration, p.MinItersPerSec = 0, 0
		if _, err := planner.Search(p); err == nil {
			return nil
		}
	}
	if tried == 0 {
		return nil
	}
	err := fmt.Errorf("planning %s: no plan fits even with max_gpus (%d) GPUs free in any offering the spec allows, so waiting for capacity cannot help: raise resources.max_gpus, allow GPUs with more memory, or lower global_batch (%w)",
		preq.Model.Name, req.MaxGPUs, cause)
	return temporal.NewNonRetryableApplicationError(err.Error(), training.ErrTypeInfeasible, err)
}
