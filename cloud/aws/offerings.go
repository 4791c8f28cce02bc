package aws

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/schooner-ml/schooner/cloud"
)

// linuxProduct is the spot product schooner buys; prices differ by operating system.
const linuxProduct = "Linux/UNIX"

// Offerings lists the catalog's shapes in the configured regions that pass f, priced with the
// live spot price of each (type, zone): the latest entry of DescribeSpotPriceHistory. The
// zones of a type are those EC2 quotes a spot price for; when EC2 quotes none for a type in a
// region (a simulator without it, a brand-new type), the catalog's zones and its typical spot
// discount stand in, so the planner still sees the shape. On-demand prices come from the
// catalog (EC2 has no price API; the Pricing API is another service). SpotCapacity is -1: EC2
// gives no count.
func (p *Provider) Offerings(ctx context.Context, f cloud.OfferingFilter) ([]cloud.Offering, error) {
	// Zones are filtered last: a type's zones are only known once EC2 has priced it.
	zoneless := f
	zoneless.Zones = nil
	estimates := map[string][]cloud.Offering{} // region → catalog offerings passing zoneless
	for _, o := range p.opts.Catalog.Offerings(providerName) {
		if _, ok := p.clients[o.Region]; !ok {
			continue
		}
		if zoneless.Match(o) {
			estimates[o.Region] = append(estimates[o.Region], o)
		}
	}
	out := []cloud.Offering{}
	for _, region := range p.regions {
		if len(estimates[region]) == 0 {
			continue
		}
		got, err := p.regionOfferings(ctx, region, estimates[region])
		if err != nil {
			return nil, err
		}
		for _, o := range got {
			if f.Match(o) {
				out = append(out, o)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Zone != out[j].Zone {
			return out[i].Zone < out[j].Zone
		}
		return out[i].InstanceType < out[j].InstanceType
	})
	return out, nil
}

// regionOfferings prices the catalog offerings of one region with its spot price history.
func (p *Provider) regionOfferings(ctx context.Context, region string, estimates []cloud.Offering) ([]cloud.Offering, error) {
	byType := map[string][]cloud.Offering{}
	var typeNames []string
	for _, o := range estimates {
		if _, ok := byType[o.InstanceType]; !ok {
			typeNames = append(typeNames, o.InstanceType)
		}
		byType[o.InstanceType] = append(byType[o.InstanceType], o)
	}
	prices, err := p.spotPrices(ctx, region, typeNames)
	if err != nil {
		return nil, err
	}
	var out []cloud.Offering
	for _, name := range typeNames {
		est := byType[name]
		zones := prices[name]
		if len(zones) == 0 {
			out = append(out, est...)
			continue
		}
		for zone, price := range zones {
			o := est[0]
			o.Zone, o.SpotPrice, o.SpotCapacity = zone, price, -1
			out = append(out, o)
		}
	}
	return out, nil
}

// spotPrices returns the latest Linux spot price per type and zone of region, reading every
// page, and remembers them for the PricePerHour of spot instances.
func (p *Provider) spotPrices(ctx context.Context, region string, typeNames []string) (map[string]map[string]float64, error) {
	c, err := p.client(region)
	if err != nil {
		return nil, err
	}
	in := &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{linuxProduct},
		// A start time of now asks for the price in effect now, one entry per type and zone.
		StartTime: aws.Time(p.opts.Now()),
	}
	for _, t := range typeNames {
		in.InstanceTypes = append(in.InstanceTypes, types.InstanceType(t))
	}
	latest := map[string]map[string]float64{}
	stamp := map[[2]string]time.Time{}
	err = eachPage(ctx, ec2.NewDescribeSpotPriceHistoryPaginator(c, in), "describing spot prices", region,
		func(page *ec2.DescribeSpotPriceHistoryOutput) {
			for _, sp := range page.SpotPriceHistory {
				typ, zone := string(sp.InstanceType), aws.ToString(sp.AvailabilityZone)
				price, err := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
				if err != nil || price <= 0 {
					continue
				}
				key, at := [2]string{typ, zone}, aws.ToTime(sp.Timestamp)
				if prev, ok := stamp[key]; ok && !at.After(prev) {
					continue
				}
				stamp[key] = at
				if latest[typ] == nil {
					latest[typ] = map[string]float64{}
				}
				latest[typ][zone] = price
			}
		})
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	for typ, zones := range latest {
		for zone, price := range zones {
			p.spot[cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: typ, Zone: zone}] = price
		}
	}
	p.mu.Unlock()
	return latest, nil
}
