package ec2api

import (
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
)

// page cuts one page out of n items by MaxResults and NextToken. EC2's tokens are opaque; these
// encode the offset of the next item together with the action, so a token from one action is
// rejected by another. Offsets are stable because listings are sorted.
type page struct{ start, end int }

// paginate returns the page of n items and the token of the next page ("" on the last one).
// minMax and maxMax bound MaxResults as EC2 does for the action; an absent MaxResults returns
// everything from the token on.
func paginate(params url.Values, action string, n, minMax, maxMax int) (page, string, *apiError) {
	start := 0
	if tok := params.Get("NextToken"); tok != "" {
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		rest, ok := strings.CutPrefix(string(raw), action+":")
		off, aerr := strconv.Atoi(rest)
		if err != nil || !ok || aerr != nil || off < 0 {
			return page{}, "", invalidParam("Invalid value '%s' for NextToken", tok)
		}
		start = min(off, n)
	}
	limit, set, aerr := intParam(params, "MaxResults")
	if aerr != nil {
		return page{}, "", aerr
	}
	if !set {
		return page{start, n}, "", nil
	}
	if limit < minMax || limit > maxMax {
		return page{}, "", invalidParam("Value ( %d ) for parameter maxResults is invalid. Expecting a value between %d and %d.", limit, minMax, maxMax)
	}
	end := min(start+limit, n)
	if end >= n {
		return page{start, end}, "", nil
	}
	return page{start, end}, base64.RawURLEncoding.EncodeToString([]byte(action + ":" + strconv.Itoa(end))), nil
}
