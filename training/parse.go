package training

import "github.com/schooner-ml/schooner/internal/specfile"

// Format is the encoding of a spec file (specfile.Format).
type Format = specfile.Format

// The spec file formats.
const (
	FormatYAML = specfile.FormatYAML
	FormatJSON = specfile.FormatJSON
)

// FormatOf guesses a spec file's format from its name: .json is JSON, anything else YAML.
func FormatOf(path string) Format { return specfile.FormatOf(path) }

// ParseSpec decodes a job spec and rejects fields it does not know, a second document and
// duplicate keys, so a typo ("iteration:") is an error instead of a silently ignored setting.
// It does not validate: call WithDefaults and Validate for that.
func ParseSpec(data []byte, format Format) (Spec, error) { return specfile.Parse[Spec](data, format) }

// MaxSpecFileBytes is the largest spec file read at all; Limits.MaxSpecBytes bounds what a
// control plane accepts after that.
const MaxSpecFileBytes = specfile.MaxBytes
