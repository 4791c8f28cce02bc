package ec2api

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// The EC2 Query protocol flattens lists into numbered keys: InstanceId.1, InstanceId.2, ...;
// Filter.1.Name with Filter.1.Value.1; TagSpecification.1.Tag.2.Key. Numbers start at 1 but
// need not be contiguous, so members are collected by index and returned in index order.

// indexes returns the member numbers N of keys "<prefix>.N" or "<prefix>.N.<rest>".
func indexes(params url.Values, prefix string) []int {
	seen := map[int]bool{}
	for k := range params {
		rest, ok := strings.CutPrefix(k, prefix+".")
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(rest, ".")
		if n, err := strconv.Atoi(num); err == nil && n > 0 {
			seen[n] = true
		}
	}
	out := make([]int, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// list returns the values of "<prefix>.N" in index order.
func list(params url.Values, prefix string) []string {
	var out []string
	for _, n := range indexes(params, prefix) {
		if v, ok := params[prefix+"."+strconv.Itoa(n)]; ok && len(v) > 0 {
			out = append(out, v[0])
		}
	}
	return out
}

// filter is one Filter.N of a Describe call: the item matches when its value for Name is any
// of Values.
type filter struct {
	Name   string
	Values []string
}

func filters(params url.Values) []filter {
	var out []filter
	for _, n := range indexes(params, "Filter") {
		p := "Filter." + strconv.Itoa(n)
		out = append(out, filter{Name: params.Get(p + ".Name"), Values: list(params, p+".Value")})
	}
	return out
}

// tagsFor collects the tags of every TagSpecification.N whose ResourceType is resourceType
// (an absent ResourceType counts as matching, for hand-written requests).
func tagsFor(params url.Values, resourceType string) map[string]string {
	out := map[string]string{}
	for _, n := range indexes(params, "TagSpecification") {
		p := "TagSpecification." + strconv.Itoa(n)
		if rt := params.Get(p + ".ResourceType"); rt != "" && rt != resourceType {
			continue
		}
		for _, m := range indexes(params, p+".Tag") {
			t := p + ".Tag." + strconv.Itoa(m)
			out[params.Get(t+".Key")] = params.Get(t + ".Value")
		}
	}
	return out
}

// intParam parses an optional integer parameter; ok is false when it is absent.
func intParam(params url.Values, name string) (v int, ok bool, aerr *apiError) {
	s := params.Get(name)
	if s == "" {
		return 0, false, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, false, invalidParam("Invalid value '%s' for %s", s, name)
	}
	return v, true, nil
}
