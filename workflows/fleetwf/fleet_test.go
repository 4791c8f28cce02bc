package fleetwf_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/workflows/fleetwf"
	"github.com/schooner-ml/schooner/workflows/internal/wftest"
)

// standIns is the acquire activity's stand-in, which the tests mock.
var standIns = map[string]any{fleet.ActivityAcquireInstances: wftest.StandIn1[cloud.CreateRequest, fleet.AcquireResult]()}

func TestFleetKeepsWhatItGotOnPartialFailure(t *testing.T) {
	env := wftest.NewEnv(standIns)
	env.OnActivity(fleet.ActivityAcquireInstances, mock.Anything, mock.Anything).Return(func(_ context.Context, req cloud.CreateRequest) (fleet.AcquireResult, error) {
		switch req.Zone {
		case "z-a":
			return fleet.AcquireResult{Instances: []cloud.Instance{{ID: "i-a1"}, {ID: "i-a2"}}}, nil
		case "z-b":
			return fleet.AcquireResult{Instances: []cloud.Instance{{ID: "i-b1"}}, CapacityShort: 1,
				Unavailable: []cloud.OfferingKey{{Capacity: cloud.Spot, InstanceType: "a1", Zone: "z-b"}}}, nil
		}
		return fleet.AcquireResult{}, temporal.NewNonRetryableApplicationError("zone is down", "Down", nil)
	})
	env.ExecuteWorkflow(fleetwf.Fleet, fleet.Input{JobID: "j", Groups: []fleet.Group{
		{Key: cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: "a1", Zone: "z-a"}, Count: 2},
		{Key: cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: "a1", Zone: "z-b"}, Count: 2},
		{Key: cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: "a1", Zone: "z-c"}, Count: 1},
	}})
	res := wftest.Result[fleet.Result](t, env)
	require.Len(t, res.Instances, 3)
	require.Equal(t, 2, res.Short)
	require.Len(t, res.Unavailable, 1)
	require.Len(t, res.Errors, 1)
}

func TestFleetRefusesAnInvalidInputBeforeBuying(t *testing.T) {
	for name, in := range map[string]fleet.Input{
		"no job":       {Groups: []fleet.Group{{Key: cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: "a1", Zone: "z"}, Count: 1}}},
		"no groups":    {JobID: "j"},
		"zero count":   {JobID: "j", Groups: []fleet.Group{{Key: cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: "a1", Zone: "z"}}}},
		"no zone":      {JobID: "j", Groups: []fleet.Group{{Key: cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: "a1"}, Count: 1}}},
		"bad capacity": {JobID: "j", Groups: []fleet.Group{{Key: cloud.OfferingKey{Capacity: "cheap", InstanceType: "a1", Zone: "z"}, Count: 1}}},
	} {
		t.Run(name, func(t *testing.T) {
			env := wftest.NewEnv(standIns)
			env.ExecuteWorkflow(fleetwf.Fleet, in)
			app, _ := wftest.Failure(t, env)
			require.Equal(t, fleet.ErrTypeInvalidInput, app.Type())
		})
	}
}
