// Package fleetact implements the instance activities of package fleet over a
// cloud.Provider: acquire, describe, release and list a job's instances. Every job domain
// (training now, serving next) acquires through them.
package fleetact

import (
	"context"
	"errors"
	"fmt"
	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
)

// Instances holds the instance activities; Provider is where instances come from (a
// cloud.Multi, a real provider or the sim market).
type Instances struct {
	Provider cloud.Provider
	// Logger receives what the activities decide (the zero value discards).
	Logger zerolog.Logger
}

var _ fleet.Activities = (*Instances)(nil)

// AcquireInstances creates instances of one offering for a job. A capacity shortage or a
// quota is returned as a result with what was obtained and the offering marked short, so the
// workflow can replan; other errors (throttling, the network) are returned so the activity is
// retried, and a retry with the same client token does not launch twice where the provider
// honours tokens. Instances obtained before an error are never dropped: they come back in
// the result, or are terminated before the error is returned.
func (t *Instances) AcquireInstances(ctx context.Context, req cloud.CreateRequest) (fleet.AcquireResult, error) {
	if req.Tags == nil {
		req.Tags = map[string]string{}
	}
	req.Tags[cloud.JobTag] = req.JobID
	got, err := t.Provider.Create(ctx, req)
	res := fleet.AcquireResult{Instances: got, CapacityShort: req.Count - len(got)}
	if res.Instances == nil {
		res.Instances = []cloud.Instance{}
	}
	switch {
	case err == nil:
		res.CapacityShort = max(res.CapacityShort, 0)
		return res, nil
	case cloud.IsInsufficientCapacity(err) || cloud.IsQuota(err):
		key := cloud.OfferingKey{Capacity: req.Capacity, InstanceType: req.InstanceType, Zone: req.Zone}
		if e, ok := cloud.AsError(err); ok && e.Offering != nil {
			key = *e.Offering
		}
		res.Unavailable = []cloud.OfferingKey{key}
		res.Reason = err.Error()
		t.Logger.Info().Str("job", req.JobID).Str("offering", key.String()).Int("got", len(got)).Int("wanted", req.Count).
			Err(err).Msg("capacity short; the job replans with what it got")
		return res, nil
	default:
		if len(got) > 0 {
			ids := cloud.IDs(got)
			if terr := t.Provider.Terminate(context.WithoutCancel(ctx), ids); terr != nil {
				err = errors.Join(err, fmt.Errorf("releasing %d instances obtained before the error: %w", len(ids), terr))
			}
		}
		return fleet.AcquireResult{}, fmt.Errorf("acquiring %d %s %s in %s: %w", req.Count, req.Capacity, req.InstanceType, req.Zone, err)
	}
}

// DescribeInstances returns the named instances as the provider sees them; an id the
// provider no longer knows comes back with state terminated, so the workflow treats it as
// lost without guessing.
func (t *Instances) DescribeInstances(ctx context.Context, ids []string) ([]cloud.Instance, error) {
	got, err := t.Provider.Describe(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("describing %d instances: %w", len(ids), err)
	}
	seen := map[string]bool{}
	for _, in := range got {
		seen[in.ID] = true
	}
	for _, id := range ids {
		if !seen[id] {
			got = append(got, cloud.Instance{ID: id, State: cloud.StateTerminated})
		}
	}
	return got, nil
}

// ReleaseInstances terminates instances; releasing an unknown or terminated one is fine, so
// the workflow may call it again after a failure.
func (t *Instances) ReleaseInstances(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if err := t.Provider.Terminate(ctx, ids); err != nil {
		return fmt.Errorf("releasing %d instances: %w", len(ids), err)
	}
	return nil
}

// ListJobInstances lists every instance still tagged with the job: at the end of a job it
// proves nothing leaked, and finds stragglers to release.
func (t *Instances) ListJobInstances(ctx context.Context, jobID string) ([]cloud.Instance, error) {
	got, err := t.Provider.List(ctx, map[string]string{cloud.JobTag: jobID})
	if err != nil {
		return nil, fmt.Errorf("listing instances of job %s: %w", jobID, err)
	}
	out := got[:0]
	for _, in := range got {
		if !in.State.Gone() {
			out = append(out, in)
		}
	}
	return out, nil
}

// TimeScale reports the provider's time scale: 1 for a real cloud, the simulated market's
// own pace otherwise.
func (t *Instances) TimeScale(context.Context) (cloud.TimeScale, error) {
	return cloud.TimeScaleOf(t.Provider), nil
}
