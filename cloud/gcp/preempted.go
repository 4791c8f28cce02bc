package gcp

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"
)

// preemptedFilter selects the zone operations GCE records when it reclaims a spot VM.
const preemptedFilter = `operationType = "compute.instances.preempted"`

// preemptions lists the VMs of zone that GCE preempted, with when. A preempted VM is
// TERMINATED, or already deleted when it asked for DELETE; either way this operation is
// the only record that the provider, not a user, stopped it.
func (p *Provider) preemptions(ctx context.Context, zone string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	token := ""
	for {
		var page []*computepb.Operation
		next, err := retry(ctx, p.opts.Retry, func(int) (string, error) {
			page = page[:0]
			it := p.ops.List(ctx, &computepb.ListZoneOperationsRequest{
				Project: p.opts.Project, Zone: zone, Filter: proto.String(preemptedFilter),
			})
			return iterator.NewPager(it, p.opts.PageSize, token).NextPage(&page)
		})
		if err != nil {
			return nil, fmt.Errorf("listing preemptions in %s, %w", zone, err)
		}
		for _, op := range page {
			if op.GetOperationType() != "compute.instances.preempted" {
				continue // a server that ignored the filter
			}
			at := parseTime(op.GetEndTime(), op.GetInsertTime())
			out[lastSegment(op.GetTargetLink())] = at
		}
		if next == "" {
			return out, nil
		}
		token = next
	}
}

// parseTime returns the first of the RFC 3339 stamps that parses, or the zero time.
func parseTime(stamps ...string) time.Time {
	for _, s := range stamps {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// preemptionCache lists each zone's preemptions at most once per call of Describe.
type preemptionCache struct {
	p     *Provider
	zones map[string]map[string]time.Time
}

func (c *preemptionCache) lookup(ctx context.Context, zone, name string) (time.Time, bool, error) {
	if c.zones == nil {
		c.zones = map[string]map[string]time.Time{}
	}
	m, ok := c.zones[zone]
	if !ok {
		var err error
		if m, err = c.p.preemptions(ctx, zone); err != nil {
			return time.Time{}, false, err
		}
		c.zones[zone] = m
	}
	at, ok := m[name]
	return at, ok, nil
}
