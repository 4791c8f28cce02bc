package ec2api

import (
	"encoding/xml"
	"sort"
	"strconv"

	"github.com/schooner-ml/schooner/cloud"
)

type describeSpotPriceHistoryResponse struct {
	XMLName xml.Name `xml:"DescribeSpotPriceHistoryResponse"`
	responseHeader
	Prices    []spotPriceXML `xml:"spotPriceHistorySet>item"`
	NextToken string         `xml:"nextToken"`
}

type spotPriceXML struct {
	InstanceType       string `xml:"instanceType"`
	ProductDescription string `xml:"productDescription"`
	SpotPrice          string `xml:"spotPrice"`
	Timestamp          string `xml:"timestamp"`
	AvailabilityZone   string `xml:"availabilityZone"`
}

// linux is the only product the simulated market prices; schooner runs Linux images.
const linux = "Linux/UNIX"

// describeSpotPriceHistory reports the backend's current spot price of every offering in the
// caller's region that passes InstanceType.N, AvailabilityZone, ProductDescription.N and the
// instance-type, availability-zone and product-description filters. The backend keeps no
// history, so each (type, zone) has one entry stamped now, whatever StartTime asked for: the
// "latest price" a client looks for is then the only one.
func (s *Server) describeSpotPriceHistory(c *call) (any, *apiError) {
	f := cloud.OfferingFilter{InstanceTypes: list(c.params, "InstanceType")}
	if c.region != "" {
		f.Regions = []string{c.region}
	}
	if z := c.params.Get("AvailabilityZone"); z != "" {
		f.Zones = []string{z}
	}
	products := list(c.params, "ProductDescription")
	byFilter := map[string][]string{}
	for _, fl := range filters(c.params) {
		switch fl.Name {
		case "instance-type", "availability-zone", "product-description":
			byFilter[fl.Name] = append(byFilter[fl.Name], fl.Values...)
		case "spot-price", "timestamp":
			// accepted and ignored: one current price per offering passes any window
		default:
			return nil, invalidParam("The filter '%s' is invalid", fl.Name)
		}
	}
	if !sellsLinux(products) || !sellsLinux(byFilter["product-description"]) {
		return s.priceReply(c, nil)
	}
	offers, err := s.backend.Offerings(c.ctx, f)
	if err != nil {
		return nil, fromBackend(err, "")
	}
	stamp := s.now().UTC().Format("2006-01-02T15:04:05.000Z")
	var prices []spotPriceXML
	for _, o := range offers {
		if o.SpotPrice <= 0 || !anyOrAll(byFilter["instance-type"], o.InstanceType) || !anyOrAll(byFilter["availability-zone"], o.Zone) {
			continue
		}
		prices = append(prices, spotPriceXML{
			InstanceType: o.InstanceType, ProductDescription: linux, AvailabilityZone: o.Zone,
			SpotPrice: strconv.FormatFloat(o.SpotPrice, 'f', 6, 64), Timestamp: stamp,
		})
	}
	sort.Slice(prices, func(i, j int) bool {
		if prices[i].InstanceType != prices[j].InstanceType {
			return prices[i].InstanceType < prices[j].InstanceType
		}
		return prices[i].AvailabilityZone < prices[j].AvailabilityZone
	})
	return s.priceReply(c, prices)
}

func (s *Server) priceReply(c *call, prices []spotPriceXML) (any, *apiError) {
	pg, next, aerr := paginate(c.params, c.action, len(prices), 1, 1000)
	if aerr != nil {
		return nil, aerr
	}
	return describeSpotPriceHistoryResponse{responseHeader: c.header(), Prices: prices[pg.start:pg.end], NextToken: next}, nil
}

func sellsLinux(products []string) bool {
	return anyOrAll(products, linux) || anyOrAll(products, linux+" (Amazon VPC)")
}

// anyOrAll reports whether v matches one of patterns; no patterns match everything.
func anyOrAll(patterns []string, v string) bool {
	return len(patterns) == 0 || anyMatch(patterns, []string{v})
}
