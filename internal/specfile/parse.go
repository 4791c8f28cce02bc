// Package specfile reads the spec files users write (a training job, a serving deployment):
// YAML or JSON, one document, no key given twice, no field the spec does not know, so a typo
// is an error instead of a silently ignored setting.
package specfile

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

// Parse decodes data into a T, rejecting unknown fields, a second document and duplicate
// keys. It does not validate: that is the spec's own business.
func Parse[T any](data []byte, format Format) (T, error) {
	var spec T
	if format == "" {
		format = FormatYAML
	}
	if format != FormatJSON && format != FormatYAML {
		return spec, fmt.Errorf("reading spec: unknown format %q (want yaml or json)", format)
	}
	if err := checkShape(data); err != nil {
		return spec, fmt.Errorf("reading %s spec: %w", format, err)
	}
	js, err := asJSON(data, format)
	if err != nil {
		return spec, err
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

// asJSON is a spec's text as JSON: YAML converted (JSON is YAML too), JSON as it is.
func asJSON(data []byte, format Format) ([]byte, error) {
	if format == FormatJSON {
		return data, nil
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("reading YAML spec: %w", err)
	}
	return js, nil
}
