package serving

import "github.com/schooner-ml/schooner/internal/specfile"

// ParseSpec decodes a deployment spec (YAML or JSON: specfile.Parse's rules: one document, no
// duplicate keys, no unknown fields). It does not validate: call WithDefaults and Validate.
func ParseSpec(data []byte, format specfile.Format) (Spec, error) {
	return specfile.Parse[Spec](data, format)
}
