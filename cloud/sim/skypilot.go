package sim

import (
	"errors"
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
// "us-west-2a_v100_1.json" becomes the trace of p3.2xlarge in us-west-2a. A file of a GPU
// and count the simulated catalog has no instance type for (SkyPilot's directories also hold
// K80 files) is left out and named in skipped; a name that is not of that form, or a trace
// that does not parse, is an error naming the file, so a replay never quietly misses a zone of
// a GPU it simulates. A directory with nothing left is an error.
func LoadSkyPilotDir(dir string) (traces map[Key]*Trace, skipped []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("loading spot-traces directory: %w", err)
	}
	out := map[Key]*Trace{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		key, err := skyPilotKey(e.Name())
		if errors.Is(err, errNoInstanceType) {
			skipped = append(skipped, fmt.Sprintf("%s: %v", path, err))
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("loading spot-traces directory: %s: %w", path, err)
		}
		t, err := LoadTrace(path)
		if err != nil {
			return nil, nil, fmt.Errorf("loading spot-traces directory: %w", err)
		}
		out[key] = t
	}
	if len(out) == 0 {
		if len(skipped) > 0 {
			return nil, skipped, fmt.Errorf("loading spot-traces directory %s: no trace of a GPU the simulated catalog has (%s)", dir, strings.Join(skipped, "; "))
		}
		return nil, nil, fmt.Errorf("loading spot-traces directory %s: no .json traces", dir)
	}
	return out, skipped, nil
}

// errNoInstanceType marks a trace file of a GPU and count with no simulated instance type.
var errNoInstanceType = errors.New("no instance type")

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
		return Key{}, fmt.Errorf("%w for %s x%s in the simulated catalog (known: %s)",
			errNoInstanceType, parts[1], parts[2], strings.Join(known, ", "))
	}
	return Key{Zone: parts[0], InstanceType: typ}, nil
}

// AttachSkyPilotDir loads a spot-traces directory (see LoadSkyPilotDir) and sets each trace
// as the capacity of its offering, replacing any capacity set before for it. It returns the
// files it left out, for the caller to show.
func (c *Config) AttachSkyPilotDir(dir string) (skipped []string, err error) {
	traces, skipped, err := LoadSkyPilotDir(dir)
	if err != nil {
		return skipped, err
	}
	c.attachTraces(traces)
	return skipped, nil
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
