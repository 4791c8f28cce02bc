package specfile

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ExplicitZeros names the keys among keys that the spec's top level gives as the number 0.
// A spec whose field reads 0 as "the default" cannot tell "replicas: 0" (a user who wants
// none) from a file that leaves replicas out, once decoded; the file can, so the parse step
// refuses the first rather than serve the default. Call it on a spec Parse accepted.
func ExplicitZeros(data []byte, format Format, keys ...string) ([]string, error) {
	js, err := asJSON(data, format)
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js, &top); err != nil {
		return nil, fmt.Errorf("reading %s spec: %w", format, err)
	}
	var zeros []string
	for _, k := range keys {
		raw, ok := top[k]
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(string(raw)), 64); err == nil && v == 0 {
			zeros = append(zeros, k)
		}
	}
	return zeros, nil
}
