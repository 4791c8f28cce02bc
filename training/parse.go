package training

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// Format is the encoding of a spec file.
type Format string

const (
	// FormatYAML reads YAML (a superset of JSON), the format examples/ uses.
	FormatYAML Format = "yaml"
	// FormatJSON reads JSON only.
	FormatJSON Format = "json"
)

// FormatOf guesses a spec file's format from its name: .json is JSON, anything else YAML,
// which also reads JSON.
func FormatOf(path string) Format {
	if strings.EqualFold(filepath.Ext(path), ".json") {
		return FormatJSON
	}
	return FormatYAML
}

// ParseSpec decodes a spec and rejects fields it does not know, so a typo ("iteration:")
// is an error instead of a silently ignored setting. It does not validate: call
// WithDefaults and Validate for that.
func ParseSpec(data []byte, format Format) (Spec, error) {
	var spec Spec
	if format == FormatJSON || format == FormatYAML || format == "" {
		if err := checkShape(data); err != nil {
			return spec, fmt.Errorf("reading %s spec: %w", orYAML(format), err)
		}
	}
	js := data
	switch format {
	case FormatJSON:
	case FormatYAML, "":
		var err error
		if js, err = yaml.YAMLToJSON(data); err != nil {
			return spec, fmt.Errorf("reading YAML spec: %w", err)
		}
	default:
		return spec, fmt.Errorf("reading spec: unknown format %q (want yaml or json)", format)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return spec, fmt.Errorf("reading %s spec: %w", format, err)
	}
	if dec.More() {
		return spec, fmt.Errorf("reading %s spec: more than one document", format)
	}
	return spec, nil
}

// orYAML names the format for messages; empty means YAML.
func orYAML(f Format) Format {
	if f == "" {
		return FormatYAML
	}
	return f
}
