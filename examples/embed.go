// Package examples holds annotated training job specs; it embeds the demo's so
// `schooner demo` runs the very file users read.
package examples

import _ "embed"

// DemoYAML is examples/demo.yaml, the job `schooner demo` runs.
//
//go:embed demo.yaml
var DemoYAML []byte
