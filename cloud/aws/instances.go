package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/schooner-ml/schooner/cloud"
)

// EC2 limits: values per filter, and instance ids per TerminateInstances.
const (
	filterChunk    = 200
	terminateChunk = 1000
)

// liveStates are the instance-state-name values of instances that still cost money.
var liveStates = []string{"pending", "running", "shutting-down", "stopping", "stopped"}

// Describe returns the named instances that EC2 still knows, in the order asked. It filters on
// instance-id rather than naming the ids, because EC2 fails a whole call that names one
// unknown id, and in a multi-region provider every id is unknown to all regions but one.
// Regions where an id was seen before are asked first; the rest only for ids still missing.
func (p *Provider) Describe(ctx context.Context, ids []string) ([]cloud.Instance, error) {
	ids = unique(ids)
	found := map[string]cloud.Instance{}
	known, _ := p.homes(ids)
	for _, region := range p.regions {
		if err := p.describeInto(ctx, region, known[region], found); err != nil {
			return nil, err
		}
	}
	for _, region := range p.regions {
		var missing []string
		for _, id := range ids {
			if _, ok := found[id]; !ok && !slices.Contains(known[region], id) {
				missing = append(missing, id)
			}
		}
		if err := p.describeInto(ctx, region, missing, found); err != nil {
			return nil, err
		}
	}
	out := make([]cloud.Instance, 0, len(found))
	for _, id := range ids {
		if inst, ok := found[id]; ok {
			out = append(out, inst)
		}
	}
	return out, nil
}

func (p *Provider) describeInto(ctx context.Context, region string, ids []string, found map[string]cloud.Instance) error {
	for start := 0; start < len(ids); start += filterChunk {
		chunk := ids[start:min(start+filterChunk, len(ids))]
		got, err := p.describe(ctx, region, []types.Filter{{Name: aws.String("instance-id"), Values: chunk}})
		if err != nil {
			return err
		}
		for _, inst := range got {
			found[inst.ID] = inst
		}
	}
	return nil
}

// describe reads every page of DescribeInstances with filters in region.
func (p *Provider) describe(ctx context.Context, region string, filters []types.Filter) ([]cloud.Instance, error) {
	c, err := p.client(region)
	if err != nil {
		return nil, err
	}
	in := &ec2.DescribeInstancesInput{Filters: filters, MaxResults: aws.Int32(p.opts.PageSize)}
	var out []cloud.Instance
	err = eachPage(ctx, ec2.NewDescribeInstancesPaginator(c, in), "describing instances", region,
		func(page *ec2.DescribeInstancesOutput) {
			for _, res := range page.Reservations {
				for _, inst := range res.Instances {
					out = append(out, p.toInstance(region, inst))
				}
			}
		})
	if err != nil {
		return nil, err
	}
	p.remember(region, out)
	return out, nil
}

// ec2Pages is what the EC2 SDK's paginators (ec2.NewDescribe...Paginator) have in common.
type ec2Pages[Page any] interface {
	HasMorePages() bool
	NextPage(context.Context, ...func(*ec2.Options)) (Page, error)
}

// eachPage hands every page of pages to use, in order. The first failure ends the walk and
// is classified like every EC2 error, naming what was being read and in which region.
func eachPage[Page any](ctx context.Context, pages ec2Pages[Page], what, region string, use func(Page)) error {
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("%s in %s: %w", what, region, classify(err, nil))
		}
		use(page)
	}
	return nil
}

// Terminate ends the instances wherever they are. Ids EC2 does not know are ignored: the
// instance is gone, which is what the caller wants.
func (p *Provider) Terminate(ctx context.Context, ids []string) error {
	ids = unique(ids)
	if _, unknown := p.homes(ids); len(unknown) > 0 {
		if _, err := p.Describe(ctx, unknown); err != nil {
			return err
		}
	}
	known, _ := p.homes(ids)
	for _, region := range p.regions {
		batch := known[region]
		for start := 0; start < len(batch); start += terminateChunk {
			if err := p.terminate(ctx, region, batch[start:min(start+terminateChunk, len(batch))]); err != nil {
				return err
			}
		}
	}
	return nil
}

// terminate ends ids in region. EC2 refuses a whole call that names one id it no longer
// knows, so on InvalidInstanceID.NotFound the ids are retried one at a time.
func (p *Provider) terminate(ctx context.Context, region string, ids []string) error {
	c, err := p.client(region)
	if err != nil {
		return err
	}
	_, err = c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids})
	err = classify(err, nil)
	if err == nil || !errors.Is(err, cloud.ErrNotFound) {
		if err != nil {
			return fmt.Errorf("terminating %d instances in %s: %w", len(ids), region, err)
		}
		return nil
	}
	for _, id := range ids {
		_, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
		if err = classify(err, nil); err != nil && !errors.Is(err, cloud.ErrNotFound) {
			return fmt.Errorf("terminating %s in %s: %w", id, region, err)
		}
	}
	return nil
}

// List returns the instances of every region that carry all tags and are not terminated,
// reading every page. List(map[string]string{cloud.JobTag: id}) finds what a job leaked.
func (p *Provider) List(ctx context.Context, tags map[string]string) ([]cloud.Instance, error) {
	filters := []types.Filter{{Name: aws.String("instance-state-name"), Values: liveStates}}
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		filters = append(filters, types.Filter{Name: aws.String("tag:" + k), Values: []string{tags[k]}})
	}
	out := []cloud.Instance{}
	for _, region := range p.regions {
		got, err := p.describe(ctx, region, filters)
		if err != nil {
			return nil, err
		}
		for _, inst := range got {
			if !inst.State.Gone() {
				out = append(out, inst)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func unique(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
