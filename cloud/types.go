// Package cloud is schooner's view of the places GPUs come from: offerings across providers,
// regions and zones; instances created, described, terminated and listed by tag; typed errors
// that tell a capacity shortage from a quota or a bad request; and interruptions (a notice with
// a deadline, then the preemption). The interface is small and owned here, the consumer's
// side; cloud/aws, cloud/gcp and cloud/sim implement it, and Fake stands in for tests.
package cloud

import (
	"slices"
	"time"

	"github.com/schooner-ml/schooner/gpu"
)

// CapacityType is how an instance is bought.
type CapacityType string

const (
	Spot     CapacityType = "spot"
	OnDemand CapacityType = "on-demand"
)

// Valid reports whether c is Spot or OnDemand.
func (c CapacityType) Valid() bool { return c == Spot || c == OnDemand }

// Offering is one instance type in one zone of one provider, with its prices and, for spot,
// a hint of how many instances could be obtained now.
type Offering struct {
	Provider        string   `json:"provider"`
	Region          string   `json:"region"`
	Zone            string   `json:"zone"`
	InstanceType    string   `json:"instance_type"`
	GPUType         gpu.Type `json:"gpu_type"`
	GPUsPerInstance int      `json:"gpus_per_instance"`
	// SpotPrice and OnDemandPrice are USD per instance-hour.
	SpotPrice     float64 `json:"spot_price"`
	OnDemandPrice float64 `json:"on_demand_price"`
	// SpotCapacity estimates how many spot instances could be created now; -1 when the
	// provider gives no hint (real clouds rarely do).
	SpotCapacity int `json:"spot_capacity"`
}

// Price is the hourly price of one instance bought as c.
func (o Offering) Price(c CapacityType) float64 {
	if c == Spot {
		return o.SpotPrice
	}
	return o.OnDemandPrice
}

// Key identifies the offering bought as c, the unit of the unavailable-offerings cache.
func (o Offering) Key(c CapacityType) OfferingKey {
	return OfferingKey{Capacity: c, InstanceType: o.InstanceType, Zone: o.Zone}
}

// OfferingKey is capacity type × instance type × zone.
type OfferingKey struct {
	Capacity     CapacityType `json:"capacity"`
	InstanceType string       `json:"instance_type"`
	Zone         string       `json:"zone"`
}

func (k OfferingKey) String() string { return string(k.Capacity) + "/" + k.InstanceType + "/" + k.Zone }

// OfferingFilter narrows Offerings; empty fields match everything.
type OfferingFilter struct {
	Regions       []string   `json:"regions,omitempty"`
	Zones         []string   `json:"zones,omitempty"`
	InstanceTypes []string   `json:"instance_types,omitempty"`
	GPUTypes      []gpu.Type `json:"gpu_types,omitempty"`
}

// Match reports whether o passes the filter.
func (f OfferingFilter) Match(o Offering) bool {
	return matchAny(f.Regions, o.Region) && matchAny(f.Zones, o.Zone) &&
		matchAny(f.InstanceTypes, o.InstanceType) && matchAny(f.GPUTypes, o.GPUType)
}

// matchAny reports whether v is in set; an empty set matches everything.
func matchAny[T comparable](set []T, v T) bool {
	return len(set) == 0 || slices.Contains(set, v)
}

// CreateRequest asks for Count instances of one offering. Providers may fulfil it in part:
// Create then returns the instances it got together with an error for the shortfall.
type CreateRequest struct {
	JobID        string       `json:"job_id"`
	Zone         string       `json:"zone"`
	InstanceType string       `json:"instance_type"`
	Capacity     CapacityType `json:"capacity"`
	Count        int          `json:"count"`
	// Tags are added to the instance; JobTag is always set from JobID.
	Tags map[string]string `json:"tags,omitempty"`
	// ClientToken makes a retried request idempotent where the provider supports it.
	ClientToken string `json:"client_token,omitempty"`
}

// JobTag is the tag (AWS) or label (GCP) that ties an instance to its schooner job, so leaked
// instances can be found and cleaned up by job.
const JobTag = "schooner-job"

// State is an instance's lifecycle state, normalised across providers.
type State string

const (
	StatePending    State = "pending"
	StateRunning    State = "running"
	StateStopping   State = "stopping"
	StateTerminated State = "terminated"
	// StatePreempted is terminated by the provider to reclaim spot capacity.
	StatePreempted State = "preempted"
)

// Gone reports whether the instance will never run work again.
func (s State) Gone() bool { return s == StateTerminated || s == StatePreempted }

// Instance is one machine as its provider describes it.
type Instance struct {
	ID           string            `json:"id"`
	Provider     string            `json:"provider"`
	Region       string            `json:"region"`
	Zone         string            `json:"zone"`
	InstanceType string            `json:"instance_type"`
	GPUType      gpu.Type          `json:"gpu_type"`
	GPUs         int               `json:"gpus"`
	Capacity     CapacityType      `json:"capacity"`
	State        State             `json:"state"`
	JobID        string            `json:"job_id,omitempty"`
	Tags         map[string]string `json:"tags,omitempty"`
	LaunchedAt   time.Time         `json:"launched_at"`
	// PricePerHour is what this instance costs, USD per hour: at launch from a create, and
	// from a describe the price in effect now where the provider can tell (a spot price
	// moves, and clouds bill the one in effect: the simulated market's current price, the
	// AWS adapter's last spot price seen).
	PricePerHour float64 `json:"price_per_hour"`
	// Interruption is set once the provider announced or carried out a preemption.
	Interruption *Interruption `json:"interruption,omitempty"`
}

// IDs is the ids of insts, in order.
func IDs(insts []Instance) []string {
	ids := make([]string, len(insts))
	for i, in := range insts {
		ids[i] = in.ID
	}
	return ids
}

// InterruptionKind distinguishes the warning from the act.
type InterruptionKind string

const (
	// Notice: the provider will reclaim the instance at Deadline (AWS: 2 minutes ahead,
	// GCP: about 30 seconds).
	Notice InterruptionKind = "notice"
	// Preempted: the provider has reclaimed the instance.
	Preempted InterruptionKind = "preempted"
)

// Interruption is a preemption notice or the preemption itself.
type Interruption struct {
	Kind       InterruptionKind `json:"kind"`
	InstanceID string           `json:"instance_id"`
	Zone       string           `json:"zone,omitempty"`
	// Deadline is when the instance will be (or was) stopped.
	Deadline time.Time `json:"deadline"`
	// At is when the provider made the interruption known.
	At time.Time `json:"at"`
}
