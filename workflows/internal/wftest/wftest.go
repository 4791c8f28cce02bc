// Package wftest is what the workflow packages' tests share: a stand-in for the fleet
// activities and a tiny scripted cloud behind them. The TrainingJob and ServingDeployment
// tests both buy, describe, list and release instances through the Fleet child and the fleet
// activities; one copy keeps their cloud behaving the same.
package wftest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/schooner-ml/schooner/activities/fleetact"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/workflows/fleetwf"
)

// FleetStandIn has the fleet activities with the contract's signatures (the compiler checks
// them against fleet.Activities). Tests embed it in their own stand-in, register it through
// the production Register functions and mock each activity.
type FleetStandIn struct{}

var _ fleet.Activities = FleetStandIn{}

func (FleetStandIn) AcquireInstances(context.Context, cloud.CreateRequest) (fleet.AcquireResult, error) {
	return fleet.AcquireResult{}, nil
}
func (FleetStandIn) DescribeInstances(context.Context, []string) ([]cloud.Instance, error) {
	return nil, nil
}
func (FleetStandIn) ReleaseInstances(context.Context, []string) error { return nil }
func (FleetStandIn) ListJobInstances(context.Context, string) ([]cloud.Instance, error) {
	return nil, nil
}
func (FleetStandIn) TimeScale(context.Context) (cloud.TimeScale, error) { return 1, nil }

// Cloud is a tiny scripted cloud behind the mocked fleet activities. Its lock guards its
// fields, and the tests' own fields of the worlds that embed it.
type Cloud struct {
	sync.Mutex
	// GPUType is every instance's GPU; Price an instance's price per hour in its zone (nil:
	// $1 everywhere).
	GPUType gpu.Type
	Price   func(zone string) float64
	// ShortOnce: zone → the next acquire there gets half of what it asked for, and the
	// offering is reported unavailable.
	ShortOnce map[string]bool

	// Next numbers the instances: i-1, i-2, ...
	Next      int
	Instances map[string]*cloud.Instance
	Released  []string
	Acquires  []cloud.CreateRequest
	// Log orders what happened: "released <instance>" (the tests add their own lines).
	Log []string
}

// NewCloud is an empty cloud of gpuType machines.
func NewCloud(gpuType gpu.Type) *Cloud {
	return &Cloud{GPUType: gpuType, Instances: map[string]*cloud.Instance{}, ShortOnce: map[string]bool{}}
}

// State sets an instance's state (a preemption, a crash).
func (c *Cloud) State(id string, s cloud.State) {
	c.Lock()
	defer c.Unlock()
	c.Instances[id].State = s
}

// Leaked is the instances not gone, sorted.
func (c *Cloud) Leaked() []string {
	c.Lock()
	defer c.Unlock()
	var out []string
	for id, in := range c.Instances {
		if !in.State.Gone() {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// RegisterFleet registers the Fleet workflow and the fleet activities of standIn through the
// production Register functions (before any mock: the test environment wants it so).
func RegisterFleet(env *testsuite.TestWorkflowEnvironment, standIn fleet.Activities) {
	fleetwf.Register(env)
	fleetact.Register(env, standIn)
}

// NewEnv is a test environment of a job on the cloud: the Fleet workflow and standIn's fleet
// activities, then what register registers (the job's workflows and activities), and the
// fleet activities mocked on the cloud; the tests mock the job's own activities.
func (c *Cloud) NewEnv(standIn fleet.Activities, register func(*testsuite.TestWorkflowEnvironment)) *testsuite.TestWorkflowEnvironment {
	env := NewEnv(nil)
	RegisterFleet(env, standIn)
	register(env)
	c.Mock(env)
	return env
}

// Offers is the cloud's catalog as an offerings activity answers it: one offering of
// instanceType in each zone z-a, z-b, ... at the given spot prices ($3 on demand, spot
// capacity 8).
func (c *Cloud) Offers(instanceType string, spotPrices ...float64) []cloud.Offering {
	out := make([]cloud.Offering, len(spotPrices))
	for i, p := range spotPrices {
		out[i] = cloud.Offering{Provider: "sim", Zone: fmt.Sprintf("z-%c", 'a'+i), InstanceType: instanceType, GPUType: c.GPUType,
			GPUsPerInstance: 1, SpotPrice: p, OnDemandPrice: 3, SpotCapacity: 8}
	}
	return out
}

// Mock mocks the fleet activities on the cloud: a time scale of 60, acquire, describe,
// release (a preempted instance stays preempted) and list by job tag.
func (c *Cloud) Mock(env *testsuite.TestWorkflowEnvironment) {
	env.OnActivity(fleet.ActivityTimeScale, mock.Anything).Return(cloud.TimeScale(60), nil)
	env.OnActivity(fleet.ActivityAcquireInstances, mock.Anything, mock.Anything).Return(func(_ context.Context, req cloud.CreateRequest) (fleet.AcquireResult, error) {
		c.Lock()
		defer c.Unlock()
		c.Acquires = append(c.Acquires, req)
		n := req.Count
		res := fleet.AcquireResult{}
		if c.ShortOnce[req.Zone] {
			c.ShortOnce[req.Zone] = false
			n = req.Count / 2
			k := cloud.OfferingKey{Capacity: req.Capacity, InstanceType: req.InstanceType, Zone: req.Zone}
			res.CapacityShort, res.Unavailable, res.Reason = req.Count-n, []cloud.OfferingKey{k}, "insufficient capacity"
		}
		price := 1.0
		if c.Price != nil {
			price = c.Price(req.Zone)
		}
		for range n {
			c.Next++
			in := cloud.Instance{ID: fmt.Sprintf("i-%d", c.Next), Provider: "sim", Zone: req.Zone, InstanceType: req.InstanceType,
				GPUType: c.GPUType, GPUs: 1, Capacity: req.Capacity, State: cloud.StateRunning, JobID: req.JobID, PricePerHour: price}
			c.Instances[in.ID] = &in
			res.Instances = append(res.Instances, in)
		}
		return res, nil
	})
	env.OnActivity(fleet.ActivityDescribeInstances, mock.Anything, mock.Anything).Return(func(_ context.Context, ids []string) ([]cloud.Instance, error) {
		c.Lock()
		defer c.Unlock()
		var out []cloud.Instance
		for _, id := range ids {
			out = append(out, *c.Instances[id])
		}
		return out, nil
	})
	env.OnActivity(fleet.ActivityReleaseInstances, mock.Anything, mock.Anything).Return(func(_ context.Context, ids []string) error {
		c.Lock()
		defer c.Unlock()
		for _, id := range ids {
			if c.Instances[id].State != cloud.StatePreempted {
				c.Instances[id].State = cloud.StateTerminated
			}
			c.Released = append(c.Released, id)
			c.Log = append(c.Log, "released "+id)
		}
		return nil
	})
	env.OnActivity(fleet.ActivityListJobInstances, mock.Anything, mock.Anything).Return(func(context.Context, string) ([]cloud.Instance, error) {
		c.Lock()
		defer c.Unlock()
		var out []cloud.Instance
		for i := 1; i <= c.Next; i++ {
			if in := c.Instances[fmt.Sprintf("i-%d", i)]; !in.State.Gone() {
				out = append(out, *in)
			}
		}
		return out, nil
	})
}
