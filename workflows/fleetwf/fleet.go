package fleetwf

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/taskqueue"
)

// Fleet acquires instances for a job, one AcquireInstances per (offering, count) group, all
// in parallel. Capacity shortages come back as unavailable keys so the job replans; a group
// whose activity fails after its retries is reported, and what the other groups got is
// still returned, never dropped, so the job can use or release it.
func Fleet(ctx workflow.Context, in fleet.Input) (fleet.Result, error) {
	if err := in.Validate(); err != nil {
		return fleet.Result{}, temporal.NewNonRetryableApplicationError(err.Error(), fleet.ErrTypeInvalidInput, nil)
	}
	futures := make([]workflow.Future, len(in.Groups))
	for i, g := range in.Groups {
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue: taskqueue.Control, StartToCloseTimeout: 2 * time.Minute,
			Summary: fmt.Sprintf("acquire %d × %s %s in %s for %s", g.Count, g.Key.Capacity, g.Key.InstanceType, g.Key.Zone, in.JobID),
			RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
				MaximumInterval: 20 * time.Second, MaximumAttempts: 5},
		})
		req := cloud.CreateRequest{JobID: in.JobID, Zone: g.Key.Zone, InstanceType: g.Key.InstanceType, Capacity: g.Key.Capacity,
			Count: g.Count, Tags: in.Tags, ClientToken: fmt.Sprintf("%s-%d", in.Token, i)}
		futures[i] = workflow.ExecuteActivity(actx, fleet.ActivityAcquireInstances, req)
	}
	res := fleet.Result{Instances: []cloud.Instance{}}
	for i, f := range futures {
		var got fleet.AcquireResult
		if err := f.Get(ctx, &got); err != nil {
			res.Short += in.Groups[i].Count
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", in.Groups[i].Key, err))
			continue
		}
		res.Instances = append(res.Instances, got.Instances...)
		res.Short += got.CapacityShort
		res.Unavailable = append(res.Unavailable, got.Unavailable...)
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("got %d instances, %d short, unavailable %v", len(res.Instances), res.Short, res.Unavailable))
	return res, nil
}
