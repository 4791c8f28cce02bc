package aws

import (
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/schooner-ml/schooner/cloud"
)

// spotTermination is the StateReason code EC2 gives an instance reclaimed by the spot market.
const spotTermination = "Server.SpotInstanceTermination"

// stateOf maps an EC2 instance to schooner's state. A spot instance going or gone with the
// spot-termination reason is preempted, not terminated: that is the only way the EC2 API
// tells a preemption from a user's termination. Stopped counts as stopping: not running work,
// but not gone either (schooner asks spot instances to terminate, so it does not occur).
func stateOf(in types.Instance) cloud.State {
	var name types.InstanceStateName
	if in.State != nil {
		name = in.State.Name
	}
	reclaimed := in.StateReason != nil && aws.ToString(in.StateReason.Code) == spotTermination
	switch name {
	case types.InstanceStateNamePending:
		return cloud.StatePending
	case types.InstanceStateNameRunning:
		return cloud.StateRunning
	case types.InstanceStateNameShuttingDown, types.InstanceStateNameTerminated:
		if reclaimed {
			return cloud.StatePreempted
		}
		if name == types.InstanceStateNameTerminated {
			return cloud.StateTerminated
		}
		return cloud.StateStopping
	default: // stopping, stopped
		return cloud.StateStopping
	}
}

// transitionAt reads the time EC2 puts in StateTransitionReason, "Service initiated
// (2024-01-02 15:04:05 GMT)".
func transitionAt(reason string) (time.Time, bool) {
	i, j := strings.LastIndex(reason, "("), strings.LastIndex(reason, ")")
	if i < 0 || j <= i {
		return time.Time{}, false
	}
	t, err := time.Parse("2006-01-02 15:04:05 MST", reason[i+1:j])
	return t, err == nil
}

// toInstance converts an EC2 instance of region into schooner's view, with GPU and price from
// the catalog and the last spot price seen.
func (p *Provider) toInstance(region string, in types.Instance) cloud.Instance {
	out := cloud.Instance{
		ID: aws.ToString(in.InstanceId), Provider: providerName, Region: region,
		InstanceType: string(in.InstanceType), Capacity: cloud.OnDemand, State: stateOf(in),
		Tags: map[string]string{}, LaunchedAt: aws.ToTime(in.LaunchTime),
	}
	if in.Placement != nil {
		out.Zone = aws.ToString(in.Placement.AvailabilityZone)
	}
	if in.InstanceLifecycle == types.InstanceLifecycleTypeSpot {
		out.Capacity = cloud.Spot
	}
	for _, t := range in.Tags {
		out.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	out.JobID = out.Tags[cloud.JobTag]
	if t, ok := p.opts.Catalog.Lookup(providerName, out.InstanceType); ok {
		out.GPUType, out.GPUs = t.GPUType, t.GPUs
		out.PricePerHour = t.OnDemand[region]
		if out.Capacity == cloud.Spot {
			out.PricePerHour = p.spotPrice(cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: out.InstanceType, Zone: out.Zone},
				t.OnDemand[region]*(1-t.SpotDiscount))
		}
	}
	if out.State == cloud.StatePreempted {
		at, ok := transitionAt(aws.ToString(in.StateTransitionReason))
		if !ok {
			at = p.opts.Now()
		}
		out.Interruption = &cloud.Interruption{Kind: cloud.Preempted, InstanceID: out.ID, Zone: out.Zone, Deadline: at, At: at}
	}
	return out
}

// spotPrice is the last spot price Offerings saw for key, else estimate.
func (p *Provider) spotPrice(key cloud.OfferingKey, estimate float64) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.spot[key]; ok {
		return v
	}
	return estimate
}
