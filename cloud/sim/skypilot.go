package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// skyPilotTypes maps the "<gpu>_<count>" of a spot-traces file name to the EC2 type the
// trace was recorded with: SkyPilot's V100 traces are p3 instances.
var skyPilotTypes = map[string]string{
	"v100_1": "p3.2xlarge",
	"v100_4": "p3.8xlarge",
	"v100_8": "p3.16xlarge",
}

// LoadSkyPilotDir reads every *.json file of a spot-traces directory (for example
// availability/16-node/aws-08-27-2023). Files are named "<zone>_<gpu>_<count>.json";
// "us-west-2a_v100_1.json" becomes the trace of p3.2xlarge in us-west-2a. A file whose name
// or GPU is not understood is an error, not skipped, so a replay never quietly misses a zone.
func LoadSkyPilotDir(dir string) (map[Key]*Trace, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loading spot-traces directory: %w", err)
	}
	out := map[Key]*Trace{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		key, err := skyPilotKey(e.Name())
		if err != nil {
			return nil, fmt.Errorf("loading spot-traces directory: %s: %w", path, err)
		}
		t, err := LoadTrace(path)
		if err != nil {
			return nil, fmt.Errorf("loading spot-traces directory: %w", err)
		}
		out[key] = t
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("loading spot-traces directory %s: no .json traces", dir)
	}
	return out, nil
}

func skyPilotKey(name string) (Key, error) {
	parts := strings.Split(strings.TrimSuffix(name, ".json"), "_")
	if len(parts) != 3 || parts[0] == "" {
		return Key{}, fmt.Errorf("file name %q is not <zone>_<gpu>_<count>.json", name)
	}
	if _, err := strconv.Atoi(parts[2]); err != nil {
		return Key{}, fmt.Errorf("file name %q: count %q is not a number", name, parts[2])
	}
	typ, ok := skyPilotTypes[strings.ToLower(parts[1])+"_"+parts[2]]
	if !ok {
		known := make([]string, 0, len(skyPilotTypes))
		for k := range skyPilotTypes {
			known = append(known, k)
		}
		sort.Strings(known)
		return Key{}, fmt.Errorf("file name %q: no instance type for %s x%s (known: %s)",
			name, parts[1], parts[2], strings.Join(known, ", "))
	}
	return Key{Zone: parts[0], InstanceType: typ}, nil
}

// AttachSkyPilotDir loads a spot-traces directory (see LoadSkyPilotDir) and sets each trace
// as the capacity of its offering, replacing any capacity set before for it.
func (c *Config) AttachSkyPilotDir(dir string) error {
	traces, err := LoadSkyPilotDir(dir)
	if err != nil {
		return err
	}
	c.attachTraces(traces)
	return nil
}

// attachTraces sets each trace as the capacity of its offering.
func (c *Config) attachTraces(traces map[Key]*Trace) {
	if c.Capacity == nil {
		c.Capacity = map[Key]Capacity{}
	}
	for k, t := range traces {
		c.Capacity[k] = Capacity{Trace: t}
	}
}
