package sim

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
)

// bundledTraces are real AWS spot availability traces shipped with schooner (see
// traces/README.md), so the simulated market replays real behaviour without any download.
//
//go:embed traces/aws-08-27-2023/*.json
var bundledTraces embed.FS

// BundledTraceSet names the traces shipped in the binary.
const BundledTraceSet = "aws-08-27-2023"

// BundledTraces parses the bundled SkyPilot traces, keyed as LoadSkyPilotDir keys them.
func BundledTraces() (map[Key]*Trace, error) {
	dir := path.Join("traces", BundledTraceSet)
	entries, err := fs.ReadDir(bundledTraces, dir)
	if err != nil {
		return nil, fmt.Errorf("reading bundled traces: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	out := map[Key]*Trace{}
	for _, name := range names {
		key, err := skyPilotKey(name)
		if err != nil {
			return nil, fmt.Errorf("bundled trace: %w", err)
		}
		b, err := bundledTraces.ReadFile(path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("reading bundled trace %s: %w", name, err)
		}
		tr, err := ParseTrace(b)
		if err != nil {
			return nil, fmt.Errorf("bundled trace %s: %w", name, err)
		}
		tr.Source = "bundled:" + BundledTraceSet + "/" + name
		out[key] = tr
	}
	return out, nil
}
