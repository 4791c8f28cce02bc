package ec2api

import (
	"context"
	"encoding/xml"
	"net/http"
	"strings"

	"github.com/schooner-ml/schooner/cloud"
)

type describeInstancesResponse struct {
	XMLName xml.Name `xml:"DescribeInstancesResponse"`
	responseHeader
	Reservations []reservationXML `xml:"reservationSet>item"`
	NextToken    string           `xml:"nextToken,omitempty"`
}

// describeInstances lists instances of the caller's region, terminated ones included, by
// InstanceId.N and Filter.N, a page at a time when MaxResults is set. As in EC2, naming an
// instance that does not exist fails the whole call, while a filter on instance-id simply
// matches nothing; and MaxResults cannot be combined with InstanceId.N.
func (s *Server) describeInstances(c *call) (any, *apiError) {
	ids := list(c.params, "InstanceId")
	fs := filters(c.params)
	for _, f := range fs {
		if _, ok := instanceFilters[filterKey(f.Name)]; !ok {
			return nil, invalidParam("The filter '%s' is invalid", f.Name)
		}
	}
	if len(ids) > 0 && c.params.Get("MaxResults") != "" {
		return nil, errf(http.StatusBadRequest, "InvalidParameterCombination",
			"The parameter instancesSet cannot be used with the parameter maxResults")
	}
	insts, aerr := s.instances(c.ctx, c.region, ids)
	if aerr != nil {
		return nil, aerr
	}
	matched := insts[:0]
	for _, inst := range insts {
		if matchAll(fs, inst) {
			matched = append(matched, inst)
		}
	}
	pg, next, aerr := paginate(c.params, c.action, len(matched), 5, 1000)
	if aerr != nil {
		return nil, aerr
	}
	return describeInstancesResponse{
		responseHeader: c.header(), NextToken: next,
		Reservations: s.reservations(matched[pg.start:pg.end]),
	}, nil
}

// instances returns the named instances of region, or all of them when ids is empty.
func (s *Server) instances(ctx context.Context, region string, ids []string) ([]cloud.Instance, *apiError) {
	named := len(ids) > 0
	if !named {
		ids = s.reg.sync(s.backend)
	}
	got, err := s.backend.Describe(ctx, ids)
	if err != nil {
		return nil, fromBackend(err, "InvalidInstanceID.NotFound")
	}
	byID := make(map[string]cloud.Instance, len(got))
	for _, inst := range got {
		if region == "" || inst.Region == region {
			byID[inst.ID] = inst
		}
	}
	out := make([]cloud.Instance, 0, len(ids))
	var unknown []string
	for _, id := range ids {
		inst, ok := byID[id]
		if !ok {
			unknown = append(unknown, id)
			continue
		}
		out = append(out, inst)
	}
	if named && len(unknown) > 0 {
		return nil, errf(http.StatusBadRequest, "InvalidInstanceID.NotFound",
			"The instance IDs '%s' do not exist", strings.Join(unknown, ", "))
	}
	return out, nil
}

// instanceFilters are the DescribeInstances filters the face understands; "tag:" stands for
// every tag:<key> filter.
var instanceFilters = map[string]func(inst cloud.Instance, name string) []string{
	"tag:": func(inst cloud.Instance, name string) []string {
		if v, ok := inst.Tags[strings.TrimPrefix(name, "tag:")]; ok {
			return []string{v}
		}
		return nil
	},
	"tag-key": func(inst cloud.Instance, _ string) []string {
		keys := make([]string, 0, len(inst.Tags))
		for k := range inst.Tags {
			keys = append(keys, k)
		}
		return keys
	},
	"instance-state-name": func(inst cloud.Instance, _ string) []string { return []string{ec2State(inst.State).Name} },
	"availability-zone":   func(inst cloud.Instance, _ string) []string { return []string{inst.Zone} },
	"instance-id":         func(inst cloud.Instance, _ string) []string { return []string{inst.ID} },
	"instance-type":       func(inst cloud.Instance, _ string) []string { return []string{inst.InstanceType} },
	"instance-lifecycle": func(inst cloud.Instance, _ string) []string {
		if inst.Capacity == cloud.Spot {
			return []string{"spot"}
		}
		return nil
	},
}

func filterKey(name string) string {
	if strings.HasPrefix(name, "tag:") {
		return "tag:"
	}
	return name
}

// matchAll is EC2's filter logic: every filter must match, a filter matches when any of its
// values does. Values may use the * and ? wildcards.
func matchAll(fs []filter, inst cloud.Instance) bool {
	for _, f := range fs {
		have := instanceFilters[filterKey(f.Name)](inst, f.Name)
		if !anyMatch(f.Values, have) {
			return false
		}
	}
	return true
}

func anyMatch(patterns, have []string) bool {
	for _, p := range patterns {
		for _, h := range have {
			if wildcard(p, h) {
				return true
			}
		}
	}
	return false
}

// wildcard matches s against p where * is any run of characters and ? any one character.
func wildcard(p, s string) bool {
	if !strings.ContainsAny(p, "*?") {
		return p == s
	}
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for i := len(s); i >= 0; i-- {
				if wildcard(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
		default:
			if len(s) == 0 || s[0] != p[0] {
				return false
			}
		}
		p, s = p[1:], s[1:]
	}
	return len(s) == 0
}
