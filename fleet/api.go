// Package fleet is the contract, without Temporal, of acquiring and releasing a job's
// instances: the Fleet child workflow's input and result and the instance activities it and
// every job workflow call. Training uses it today, serving will; the workflow lives in
// workflows/fleetwf, the activities in activities/fleetact.
package fleet

import (
	"context"
	"errors"
	"fmt"

	"github.com/schooner-ml/schooner/cloud"
)

// WorkflowFleet is the Fleet child workflow's type name.
const WorkflowFleet = "Fleet"

// Activity names of the instance activities, all on the control queue.
const (
	ActivityAcquireInstances  = "AcquireInstances"
	ActivityDescribeInstances = "DescribeInstances"
	ActivityReleaseInstances  = "ReleaseInstances"
	ActivityListJobInstances  = "ListJobInstances"
	ActivityTimeScale         = "ProviderTimeScale"
)

// ErrTypeInvalidInput is the error type of a Fleet started with an invalid input.
const ErrTypeInvalidInput = "InvalidFleetInput"

// Group asks for Count instances of one offering.
type Group struct {
	Key   cloud.OfferingKey `json:"key"`
	Count int               `json:"count"`
}

// Input is the Fleet child workflow's input.
type Input struct {
	JobID  string            `json:"job_id"`
	Groups []Group           `json:"groups"`
	Tags   map[string]string `json:"tags,omitempty"`
	// Token makes retried creates idempotent; the group index is appended.
	Token string `json:"token,omitempty"`
}

// Count is how many instances the groups ask for.
func (in Input) Count() int {
	n := 0
	for _, g := range in.Groups {
		n += g.Count
	}
	return n
}

// Validate checks the input before anything is bought: a job id to tag instances with, and
// groups that each name a zone, an instance type, a capacity type and a positive count.
func (in Input) Validate() error {
	if in.JobID == "" {
		return errors.New("fleet input: job_id is required")
	}
	if len(in.Groups) == 0 {
		return errors.New("fleet input: groups is empty")
	}
	for i, g := range in.Groups {
		switch {
		case g.Count < 1:
			return fmt.Errorf("fleet input: groups[%d].count must be ≥ 1 (got %d)", i, g.Count)
		case g.Key.Zone == "" || g.Key.InstanceType == "":
			return fmt.Errorf("fleet input: groups[%d].key needs a zone and an instance type", i)
		case g.Key.Capacity != cloud.Spot && g.Key.Capacity != cloud.OnDemand:
			return fmt.Errorf("fleet input: groups[%d].key.capacity must be %q or %q (got %q)", i, cloud.Spot, cloud.OnDemand, g.Key.Capacity)
		}
	}
	return nil
}

// Result is every instance the fleet obtained (never dropped on a partial failure) and the
// offerings that were short.
type Result struct {
	Instances   []cloud.Instance    `json:"instances"`
	Unavailable []cloud.OfferingKey `json:"unavailable,omitempty"`
	Short       int                 `json:"short"`
	Errors      []string            `json:"errors,omitempty"`
}

// AcquireResult is what AcquireInstances got. A capacity shortage or a quota is a result,
// not an error, so the workflow can replan with what it got.
type AcquireResult struct {
	Instances     []cloud.Instance    `json:"instances"`
	CapacityShort int                 `json:"capacity_short"`
	Unavailable   []cloud.OfferingKey `json:"unavailable,omitempty"`
	Reason        string              `json:"reason,omitempty"`
}

// Activities are the instance activities; activities/fleetact implements them over a
// cloud.Provider.
type Activities interface {
	AcquireInstances(ctx context.Context, req cloud.CreateRequest) (AcquireResult, error)
	DescribeInstances(ctx context.Context, ids []string) ([]cloud.Instance, error)
	ReleaseInstances(ctx context.Context, ids []string) error
	ListJobInstances(ctx context.Context, jobID string) ([]cloud.Instance, error)
	// TimeScale is the provider's time scale (cloud.TimeScaleOf): jobs convert notice
	// periods, TTLs and deadlines with it instead of trusting a number the user typed.
	TimeScale(ctx context.Context) (cloud.TimeScale, error)
}
