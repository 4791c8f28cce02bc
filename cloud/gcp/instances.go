package gcp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"

	"github.com/schooner-ml/schooner/cloud"
)

// get reads one VM, retrying throttled calls; errors come back classified.
func (p *Provider) get(ctx context.Context, zone, name string) (*computepb.Instance, error) {
	return retry(ctx, p.opts.Retry, func(int) (*computepb.Instance, error) {
		return p.inst.Get(ctx, &computepb.GetInstanceRequest{Project: p.opts.Project, Zone: zone, Instance: name})
	})
}

// Describe reads each VM from the zone it was last seen in, or searches the provider's
// zones. A TERMINATED VM with a preemption operation is StatePreempted; a VM that is gone
// is omitted, unless a preemption operation shows GCE deleted it, in which case it is
// reported preempted.
func (p *Provider) Describe(ctx context.Context, ids []string) ([]cloud.Instance, error) {
	out := []cloud.Instance{}
	pc := &preemptionCache{p: p}
	for _, id := range ids {
		inst, ok, err := p.describeOne(ctx, pc, id)
		if err != nil {
			return nil, fmt.Errorf("describing %s, %w", id, err)
		}
		if ok {
			out = append(out, inst)
		}
	}
	return out, nil
}

func (p *Provider) describeOne(ctx context.Context, pc *preemptionCache, id string) (cloud.Instance, bool, error) {
	zones := p.zonesFor(id)
	for _, z := range zones {
		in, err := p.get(ctx, z, id)
		if cloud.IsNotFound(err) {
			continue
		}
		if err != nil {
			return cloud.Instance{}, false, err
		}
		inst := p.convert(in)
		if inst.State == cloud.StateTerminated {
			at, preempted, err := pc.lookup(ctx, z, id)
			if err != nil {
				return cloud.Instance{}, false, err
			}
			if preempted {
				preempt(&inst, at)
			}
		}
		p.remember(inst)
		return inst, true, nil
	}
	// Gone: deleted by a user, or by GCE after preempting a VM that asked for DELETE.
	for _, z := range zones {
		at, preempted, err := pc.lookup(ctx, z, id)
		if err != nil {
			return cloud.Instance{}, false, err
		}
		if !preempted {
			continue
		}
		inst, ok := p.lastSeen(id)
		if !ok {
			inst = cloud.Instance{ID: id, Provider: ProviderName, Zone: z, Capacity: cloud.Spot}
		}
		preempt(&inst, at)
		return inst, true, nil
	}
	p.forget(id)
	return cloud.Instance{}, false, nil
}

// Terminate deletes the VMs, up to Options.CreateParallelism at a time, and waits for the
// deletions (a GCE delete takes tens of seconds). VMs that are already gone are fine; the
// other failures are joined.
func (p *Provider) Terminate(ctx context.Context, ids []string) error {
	errs := make([]error, len(ids))
	sem := make(chan struct{}, p.opts.CreateParallelism)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := p.terminateOne(ctx, id); err != nil {
				errs[i] = fmt.Errorf("terminating %s, %w", id, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (p *Provider) terminateOne(ctx context.Context, id string) error {
	for _, z := range p.zonesFor(id) {
		op, err := retry(ctx, p.opts.Retry, func(int) (*compute.Operation, error) {
			return p.inst.Delete(ctx, &computepb.DeleteInstanceRequest{Project: p.opts.Project, Zone: z, Instance: id})
		})
		if cloud.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if _, err := p.wait(ctx, z, op); err != nil && !cloud.IsNotFound(err) {
			return err
		}
		break
	}
	p.forget(id)
	return nil
}

// List returns the live VMs of every zone that carry all tags, read with the label filter
// GCE evaluates server side, page by page.
func (p *Provider) List(ctx context.Context, tags map[string]string) ([]cloud.Instance, error) {
	filter := labelFilter(tags)
	out := []cloud.Instance{}
	for _, z := range p.zones {
		items, err := p.listZone(ctx, z, filter)
		if err != nil {
			return nil, fmt.Errorf("listing instances in %s, %w", z, err)
		}
		for _, in := range items {
			inst := p.convert(in)
			if inst.State.Gone() {
				continue
			}
			p.remember(inst)
			out = append(out, inst)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (p *Provider) listZone(ctx context.Context, zone, filter string) ([]*computepb.Instance, error) {
	var all []*computepb.Instance
	token := ""
	for {
		var page []*computepb.Instance
		next, err := retry(ctx, p.opts.Retry, func(int) (string, error) {
			page = page[:0]
			req := &computepb.ListInstancesRequest{Project: p.opts.Project, Zone: zone}
			if filter != "" {
				req.Filter = proto.String(filter)
			}
			return iterator.NewPager(p.inst.List(ctx, req), p.opts.PageSize, token).NextPage(&page)
		})
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" {
			return all, nil
		}
		token = next
	}
}

// labelFilter is the GCE filter requiring every tag, folded as Create folds labels.
func labelFilter(tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	terms := make([]string, 0, len(keys))
	for _, k := range keys {
		terms = append(terms, fmt.Sprintf("labels.%s = %q", labelKey(k), labelValue(tags[k])))
	}
	return strings.Join(terms, " AND ")
}
