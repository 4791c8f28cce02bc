package ec2api

import (
	"context"
	"encoding/xml"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/catalog"
)

type runInstancesResponse struct {
	XMLName xml.Name `xml:"RunInstancesResponse"`
	responseHeader
	reservationXML
}

// idempotent is what a ClientToken already bought: the reservation, and a fingerprint of the
// request so a reused token with other parameters is refused as EC2 refuses it.
type idempotent struct {
	fingerprint   string
	reservationID string
	ids           []string
}

// runRequest is a parsed RunInstances.
type runRequest struct {
	imageID, instanceType, zone string
	minCount, maxCount          int
	capacity                    cloud.CapacityType
	maxPrice                    float64
	tags                        map[string]string
	clientToken                 string
}

// runInstances launches between MinCount and MaxCount instances of one type in one zone, on
// demand or as one-time spot instances that terminate on interruption. As in EC2, fewer than
// MaxCount is success as long as MinCount were launched; fewer than MinCount launches nothing
// and fails with the capacity error.
func (s *Server) runInstances(c *call) (any, *apiError) {
	req, aerr := parseRun(c.params)
	if aerr != nil {
		return nil, aerr
	}
	if req.clientToken != "" {
		s.runMu.Lock()
		defer s.runMu.Unlock()
		if out, aerr, done := s.replay(c, req); done {
			return out, aerr
		}
	}
	ctx := c.ctx
	if aerr := s.checkPlacement(ctx, c.region, &req); aerr != nil {
		return nil, aerr
	}
	jobID := req.tags[cloud.JobTag]
	tags := map[string]string{}
	for k, v := range req.tags {
		if k != cloud.JobTag {
			tags[k] = v
		}
	}
	got, err := s.backend.Create(ctx, cloud.CreateRequest{
		JobID: jobID, Zone: req.zone, InstanceType: req.instanceType, Capacity: req.capacity,
		Count: req.maxCount, Tags: tags, ClientToken: req.clientToken,
	})
	if err == nil && len(got) < req.minCount {
		err = &cloud.Error{Kind: cloud.ErrInsufficientCapacity, Message: "the backend launched fewer than MinCount"}
	}
	if err != nil && len(got) < req.minCount {
		if len(got) > 0 {
			// EC2 launches all of MinCount or nothing; give back what the backend did start.
			_ = s.backend.Terminate(ctx, cloud.IDs(got))
		}
		if errors.Is(err, cloud.ErrNotFound) {
			return nil, s.explainMissing(ctx, req)
		}
		return nil, fromBackend(err, "")
	}
	rid := "r-" + strings.ReplaceAll(newRequestID(), "-", "")[:17]
	ids := cloud.IDs(got)
	s.reg.launched(rid, ids)
	if req.clientToken != "" {
		s.rememberToken(req.clientToken, idempotent{fingerprint: fingerprint(c.params), reservationID: rid, ids: ids})
	}
	return s.runReply(c, rid, got, req), nil
}

func (s *Server) runReply(c *call, rid string, got []cloud.Instance, req runRequest) runInstancesResponse {
	res := reservationXML{ReservationID: rid, OwnerID: s.opts.OwnerID}
	for i, inst := range got {
		x := s.toXML(inst)
		x.ImageID = req.imageID
		x.AMILaunchIndex = i
		x.ClientToken = req.clientToken
		res.Instances = append(res.Instances, x)
	}
	return runInstancesResponse{responseHeader: c.header(), reservationXML: res}
}

// replay answers a repeated ClientToken with the reservation it already bought.
func (s *Server) replay(c *call, req runRequest) (any, *apiError, bool) {
	s.mu.Lock()
	prev, ok := s.tokens[req.clientToken]
	s.mu.Unlock()
	if !ok {
		return nil, nil, false
	}
	if prev.fingerprint != fingerprint(c.params) {
		return nil, errf(http.StatusBadRequest, "IdempotentParameterMismatch",
			"The client token %s was used before with different parameters.", req.clientToken), true
	}
	got, err := s.backend.Describe(c.ctx, prev.ids)
	if err != nil {
		return nil, fromBackend(err, "InvalidInstanceID.NotFound"), true
	}
	return s.runReply(c, prev.reservationID, got, req), nil, true
}

func parseRun(p url.Values) (runRequest, *apiError) {
	req := runRequest{
		imageID: p.Get("ImageId"), instanceType: p.Get("InstanceType"),
		zone: p.Get("Placement.AvailabilityZone"), clientToken: p.Get("ClientToken"),
		capacity: cloud.OnDemand, tags: tagsFor(p, "instance"),
	}
	for _, name := range []string{"ImageId", "InstanceType", "MinCount", "MaxCount"} {
		if p.Get(name) == "" {
			return req, missing(name)
		}
	}
	var aerr *apiError
	if req.minCount, _, aerr = intParam(p, "MinCount"); aerr != nil {
		return req, aerr
	}
	if req.maxCount, _, aerr = intParam(p, "MaxCount"); aerr != nil {
		return req, aerr
	}
	if req.minCount < 1 || req.maxCount < 1 {
		return req, invalidParam("Instance count must be at least 1 (MinCount %d, MaxCount %d)", req.minCount, req.maxCount)
	}
	if req.minCount > req.maxCount {
		return req, invalidParam("MinCount %d is larger than MaxCount %d", req.minCount, req.maxCount)
	}
	switch mt := p.Get("InstanceMarketOptions.MarketType"); mt {
	case "":
	case "spot":
		req.capacity = cloud.Spot
	default:
		return req, invalidParam("Invalid value '%s' for InstanceMarketOptions.MarketType", mt)
	}
	if req.capacity == cloud.Spot {
		if t := p.Get("InstanceMarketOptions.SpotOptions.SpotInstanceType"); t != "" && t != "one-time" {
			return req, errf(http.StatusBadRequest, "Unsupported", "SpotInstanceType %s is not supported by this simulator; use one-time", t)
		}
		if b := p.Get("InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior"); b != "" && b != "terminate" {
			return req, errf(http.StatusBadRequest, "Unsupported", "InstanceInterruptionBehavior %s is not supported by this simulator; use terminate", b)
		}
		if mp := p.Get("InstanceMarketOptions.SpotOptions.MaxPrice"); mp != "" {
			v, err := strconv.ParseFloat(mp, 64)
			if err != nil || v <= 0 {
				return req, invalidParam("Invalid value '%s' for MaxPrice", mp)
			}
			req.maxPrice = v
		}
	}
	return req, nil
}

// checkPlacement picks a zone when none was asked for (the cheapest offering of the type in the
// caller's region, as good a choice as EC2's), rejects a zone outside the caller's region, and
// refuses a spot MaxPrice below the current price.
func (s *Server) checkPlacement(ctx context.Context, region string, req *runRequest) *apiError {
	if req.zone != "" && region != "" && catalog.RegionOf("aws", req.zone) != region {
		return invalidParam("Invalid availability zone: [%s]", req.zone)
	}
	if req.zone != "" && req.maxPrice == 0 {
		return nil
	}
	f := cloud.OfferingFilter{InstanceTypes: []string{req.instanceType}}
	if region != "" {
		f.Regions = []string{region}
	}
	if req.zone != "" {
		f.Zones = []string{req.zone}
	}
	offers, err := s.backend.Offerings(ctx, f)
	if err != nil {
		return fromBackend(err, "")
	}
	if len(offers) == 0 {
		return s.explainMissing(ctx, *req)
	}
	sort.Slice(offers, func(i, j int) bool { return offers[i].Price(req.capacity) < offers[j].Price(req.capacity) })
	if req.zone == "" {
		req.zone = offers[0].Zone
	}
	if req.capacity == cloud.Spot && req.maxPrice > 0 && req.maxPrice < offers[0].SpotPrice {
		return errf(http.StatusBadRequest, "SpotMaxPriceTooLow",
			"Your Spot request price of %g is lower than the minimum required Spot request fulfillment price of %g.", req.maxPrice, offers[0].SpotPrice)
	}
	return nil
}

// explainMissing says, as EC2 would, why there is no offering for the request: the type is
// unknown, the zone is unknown, or the type is not sold in that zone.
func (s *Server) explainMissing(ctx context.Context, req runRequest) *apiError {
	if offers, err := s.backend.Offerings(ctx, cloud.OfferingFilter{InstanceTypes: []string{req.instanceType}}); err == nil && len(offers) == 0 {
		return invalidParam("Invalid value '%s' for InstanceType.", req.instanceType)
	}
	if req.zone != "" {
		if offers, err := s.backend.Offerings(ctx, cloud.OfferingFilter{Zones: []string{req.zone}}); err == nil && len(offers) == 0 {
			return invalidParam("Invalid availability zone: [%s]", req.zone)
		}
	}
	return errf(http.StatusBadRequest, "Unsupported",
		"Your requested instance type (%s) is not supported in your requested Availability Zone (%s).", req.instanceType, req.zone)
}

// fingerprint is the request minus the parameters that legitimately differ between retries.
func fingerprint(p url.Values) string {
	q := url.Values{}
	for k, v := range p {
		if k != "ClientToken" {
			q[k] = v
		}
	}
	return q.Encode()
}
