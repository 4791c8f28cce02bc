package aws

import (
	"context"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/catalog"
)

// Create launches req.Count instances with one RunInstances call, MinCount 1 and MaxCount
// Count, so EC2 starts as many as it has rather than none: fewer than asked comes back with
// the instances and an error wrapping ErrInsufficientCapacity for the rest, whose Offering
// names what was short. Spot instances are one-time requests that terminate on interruption:
// schooner replans rather than waits for a stopped instance to come back. Every instance is
// tagged with cloud.JobTag (for leak cleanup by List) and a Name.
func (p *Provider) Create(ctx context.Context, req cloud.CreateRequest) ([]cloud.Instance, error) {
	if err := validate(req); err != nil {
		return nil, err
	}
	region := catalog.RegionOf(providerName, req.Zone)
	c, err := p.client(region)
	if err != nil {
		return nil, err
	}
	key := cloud.OfferingKey{Capacity: req.Capacity, InstanceType: req.InstanceType, Zone: req.Zone}
	in := &ec2.RunInstancesInput{
		ImageId:           aws.String(p.imageID(region)),
		InstanceType:      types.InstanceType(req.InstanceType),
		MinCount:          aws.Int32(1),
		MaxCount:          aws.Int32(int32(req.Count)),
		Placement:         &types.Placement{AvailabilityZone: aws.String(req.Zone)},
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: launchTags(req)}},
	}
	if req.ClientToken != "" {
		in.ClientToken = aws.String(req.ClientToken)
	}
	if req.Capacity == cloud.Spot {
		in.InstanceMarketOptions = &types.InstanceMarketOptionsRequest{
			MarketType: types.MarketTypeSpot,
			SpotOptions: &types.SpotMarketOptions{
				SpotInstanceType:             types.SpotInstanceTypeOneTime,
				InstanceInterruptionBehavior: types.InstanceInterruptionBehaviorTerminate,
			},
		}
	}
	out, err := c.RunInstances(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("creating %d %s %s in %s: %w", req.Count, req.Capacity, req.InstanceType, req.Zone, classify(err, &key))
	}
	got := make([]cloud.Instance, 0, len(out.Instances))
	for _, inst := range out.Instances {
		got = append(got, p.toInstance(region, inst))
	}
	p.remember(region, got)
	if len(got) < req.Count {
		short := &cloud.Error{Kind: cloud.ErrInsufficientCapacity, Provider: providerName, Code: "InsufficientInstanceCapacity",
			Message: fmt.Sprintf("EC2 launched %d of %d", len(got), req.Count), Offering: &key}
		return got, fmt.Errorf("creating %d %s %s in %s: %w", req.Count, req.Capacity, req.InstanceType, req.Zone, short)
	}
	return got, nil
}

// validate refuses requests EC2 would refuse anyway, with a clearer message and no API call.
func validate(req cloud.CreateRequest) error {
	var msg string
	switch {
	case req.Count < 1:
		msg = fmt.Sprintf("count must be at least 1, got %d", req.Count)
	case !req.Capacity.Valid():
		msg = fmt.Sprintf("capacity type must be %q or %q, got %q", cloud.Spot, cloud.OnDemand, req.Capacity)
	case req.Zone == "":
		msg = "zone is required"
	case req.InstanceType == "":
		msg = "instance type is required"
	default:
		return nil
	}
	return &cloud.Error{Kind: cloud.ErrInvalidRequest, Provider: providerName, Code: "InvalidParameterValue", Message: msg}
}

// launchTags are the request's tags plus the job tag and a Name that says who launched it.
func launchTags(req cloud.CreateRequest) []types.Tag {
	tags := map[string]string{"Name": "schooner-" + req.JobID}
	for k, v := range req.Tags {
		tags[k] = v
	}
	tags[cloud.JobTag] = req.JobID
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]types.Tag, 0, len(keys))
	for _, k := range keys {
		out = append(out, types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}
