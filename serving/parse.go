package serving

import "github.com/schooner-ml/schooner/internal/specfile"

// defaultedCounts are the counts a spec leaves out to get their defaults (WithDefaults), in
// the order a problem list names them: given as 0 in the file they are refused, not
// defaulted, so "replicas: 0" never deploys a replica.
var defaultedCounts = []struct {
	key string
	def int
}{{"stages", 1}, {"replicas", 1}, {"max_batch", DefaultMaxBatch}, {"max_context", DefaultMaxContext}, {"queue", DefaultQueue}}

// ParseSpec decodes a deployment spec (YAML or JSON: specfile.Parse's rules: one document, no
// duplicate keys, no unknown fields) and refuses a count given as 0 whose absence means its
// default (defaultedCounts). It does not validate: call WithDefaults and Validate.
func ParseSpec(data []byte, format specfile.Format) (Spec, error) {
	spec, err := specfile.Parse[Spec](data, format)
	if err != nil {
		return spec, err
	}
	keys := make([]string, len(defaultedCounts))
	defaults := make(map[string]int, len(defaultedCounts))
	for i, d := range defaultedCounts {
		keys[i], defaults[d.key] = d.key, d.def
	}
	zeros, err := specfile.ExplicitZeros(data, format, keys...)
	if err != nil {
		return spec, err
	}
	var c specfile.Collector
	for _, z := range zeros {
		c.Add(z, "0 is not allowed: give at least 1, or leave %s out for its default (%d)", z, defaults[z])
	}
	return spec, c.Err("serving")
}
