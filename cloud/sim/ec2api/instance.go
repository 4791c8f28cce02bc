package ec2api

import (
	"sort"
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

// instanceXML is the subset of EC2's Instance document that schooner reads, with the element
// names the SDK's ec2query deserializer expects.
type instanceXML struct {
	InstanceID            string        `xml:"instanceId"`
	ImageID               string        `xml:"imageId,omitempty"`
	State                 stateXML      `xml:"instanceState"`
	Reason                string        `xml:"reason"`
	AMILaunchIndex        int           `xml:"amiLaunchIndex"`
	InstanceType          string        `xml:"instanceType"`
	LaunchTime            string        `xml:"launchTime"`
	Placement             placementXML  `xml:"placement"`
	InstanceLifecycle     string        `xml:"instanceLifecycle,omitempty"`
	SpotInstanceRequestID string        `xml:"spotInstanceRequestId,omitempty"`
	StateReason           *stateReason  `xml:"stateReason,omitempty"`
	Tags                  []tagXML      `xml:"tagSet>item"`
	Groups                []struct{}    `xml:"groupSet>item"`
	ClientToken           string        `xml:"clientToken,omitempty"`
	Monitoring            monitoringXML `xml:"monitoring"`
}

type stateXML struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

type placementXML struct {
	AvailabilityZone string `xml:"availabilityZone"`
	Tenancy          string `xml:"tenancy"`
}

type stateReason struct {
	Code    string `xml:"code"`
	Message string `xml:"message"`
}

type tagXML struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

type monitoringXML struct {
	State string `xml:"state"`
}

// ec2State is the EC2 state of a backend state, with EC2's numeric code. A preempted instance
// is simply terminated in EC2; its stateReason tells why.
func ec2State(s cloud.State) stateXML {
	switch s {
	case cloud.StatePending:
		return stateXML{0, "pending"}
	case cloud.StateRunning:
		return stateXML{16, "running"}
	case cloud.StateStopping:
		return stateXML{32, "shutting-down"}
	default:
		return stateXML{48, "terminated"}
	}
}

// The state reasons EC2 gives for the two ways an instance ends in schooner.
var (
	reasonSpot = stateReason{"Server.SpotInstanceTermination", "Server.SpotInstanceTermination: Spot instance termination"}
	reasonUser = stateReason{"Client.UserInitiatedShutdown", "Client.UserInitiatedShutdown: User initiated shutdown"}
)

// transitionTime is the layout EC2 uses inside StateTransitionReason, "User initiated
// (2024-01-02 15:04:05 GMT)".
const transitionTime = "2006-01-02 15:04:05 MST"

// toXML renders a backend instance as EC2 describes it.
func (s *Server) toXML(inst cloud.Instance) instanceXML {
	x := instanceXML{
		InstanceID: inst.ID, State: ec2State(inst.State), InstanceType: inst.InstanceType,
		LaunchTime: inst.LaunchedAt.UTC().Format("2006-01-02T15:04:05.000Z"),
		Placement:  placementXML{AvailabilityZone: inst.Zone, Tenancy: "default"},
		Monitoring: monitoringXML{State: "disabled"},
	}
	if inst.Capacity == cloud.Spot {
		x.InstanceLifecycle = "spot"
		x.SpotInstanceRequestID = "sir-" + inst.ID
	}
	keys := make([]string, 0, len(inst.Tags))
	for k := range inst.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		x.Tags = append(x.Tags, tagXML{k, inst.Tags[k]})
	}
	if !inst.State.Gone() && inst.State != cloud.StateStopping {
		return x
	}
	// A spot instance shutting down after a notice is being reclaimed, not stopped by its user.
	preempted := inst.State == cloud.StatePreempted || (inst.Interruption != nil &&
		(inst.Interruption.Kind == cloud.Preempted || inst.State == cloud.StateStopping))
	at, ok := s.reg.endedAt(inst.ID)
	if preempted {
		r := reasonSpot
		x.StateReason = &r
		if inst.Interruption != nil && !inst.Interruption.Deadline.IsZero() {
			at, ok = inst.Interruption.Deadline, true
		}
		x.Reason = "Service initiated"
	} else {
		r := reasonUser
		x.StateReason = &r
		x.Reason = "User initiated"
	}
	if !ok {
		at = s.opts.Now()
	}
	x.Reason += " (" + at.UTC().Format(transitionTime) + ")"
	return x
}

// reservationXML groups the instances launched by one RunInstances call.
type reservationXML struct {
	ReservationID string        `xml:"reservationId"`
	OwnerID       string        `xml:"ownerId"`
	Groups        []struct{}    `xml:"groupSet>item"`
	Instances     []instanceXML `xml:"instancesSet>item"`
}

// reservations groups instances by reservation, keeping the order of first appearance, as
// DescribeInstances returns them.
func (s *Server) reservations(insts []cloud.Instance) []reservationXML {
	var out []reservationXML
	at := map[string]int{}
	for _, inst := range insts {
		rid := s.reg.reservationOf(inst.ID)
		i, ok := at[rid]
		if !ok {
			i = len(out)
			at[rid] = i
			out = append(out, reservationXML{ReservationID: rid, OwnerID: s.opts.OwnerID})
		}
		out[i].Instances = append(out[i].Instances, s.toXML(inst))
	}
	return out
}

// now is the face's clock.
func (s *Server) now() time.Time { return s.opts.Now() }
