package gcp

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/schooner-ml/schooner/cloud"
)

// PreemptionFeed follows GCE's preemptions as a cloud.EventSource, for the control plane's
// PreemptionRelay: GCE pushes nothing to the control side (no queue like AWS's EventBridge),
// so the feed lists each zone's compute.instances.preempted operations every Interval and
// keeps the new ones, each with its instance's job label (Describe). Preemptions from before
// the feed started are history and are not kept. Every poll costs one operations list per zone
// of the provider: keep the zones few, or the interval long, on a project with tight quotas.
type PreemptionFeed struct {
	P *Provider
	// Interval between polls (5 s when 0).
	Interval time.Duration
	// OnError hears what could not be read (nil: ignored).
	OnError func(error)

	cloud.EventLog

	mu      sync.Mutex
	started time.Time
	seen    map[string]bool
}

var _ cloud.EventSource = (*PreemptionFeed)(nil)

// Run polls until ctx ends.
func (f *PreemptionFeed) Run(ctx context.Context) {
	every := f.Interval
	if every <= 0 {
		every = 5 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := f.Poll(ctx); err != nil && ctx.Err() == nil && f.OnError != nil {
			f.OnError(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Poll lists every zone's preemptions once and keeps those not seen before.
func (f *PreemptionFeed) Poll(ctx context.Context) error {
	f.mu.Lock()
	if f.seen == nil {
		f.seen, f.started = map[string]bool{}, f.P.opts.Now()
	}
	started := f.started
	f.mu.Unlock()
	for _, zone := range f.P.Zones() {
		found, err := f.P.preemptions(ctx, zone)
		if err != nil {
			return fmt.Errorf("gcp preemption feed: %w", err)
		}
		for name, at := range found {
			key := zone + "/" + name + "/" + at.String()
			f.mu.Lock()
			old := f.seen[key]
			f.seen[key] = true
			f.mu.Unlock()
			if old || (!at.IsZero() && at.Before(started)) {
				continue
			}
			f.keep(ctx, zone, name, at)
		}
	}
	return nil
}

// keep looks the instance up for its job label and records the preemption.
func (f *PreemptionFeed) keep(ctx context.Context, zone, name string, at time.Time) {
	inst := cloud.Instance{ID: name, Provider: "gcp", Zone: zone}
	if found, err := f.P.Describe(ctx, []string{name}); err == nil {
		for _, in := range found {
			if in.ID == name {
				inst = in
			}
		}
	} else if f.OnError != nil {
		f.OnError(fmt.Errorf("gcp preemption feed: describing %s: %w", name, err))
	}
	inst.Interruption = &cloud.Interruption{Kind: cloud.Preempted, InstanceID: name, Zone: zone, At: at}
	f.Add(cloud.Event{Time: at, Kind: cloud.EventPreempted, Instance: inst})
}
