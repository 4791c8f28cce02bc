package policy

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/schooner-ml/schooner/cloud/catalog"
	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/gpu"
)

// Market is the spot capacity a policy meets: per zone, how many instances of one instance
// type could be launched at each moment of a trace, and the prices. Capacity is a trace's
// step function; past the trace's end its last count holds.
type Market struct {
	// Source names the trace directory, for reports.
	Source string
	// Provider is the cloud of the instance type (empty: aws, the traces' cloud).
	Provider     string
	InstanceType string
	GPU          gpu.Type
	GPUsPerInst  int
	// Zones are the zones with a trace, sorted.
	Zones []string
	// SpotPrice is USD per instance-hour per zone; OnDemandPrice is one price for every zone.
	SpotPrice     map[string]float64
	OnDemandPrice float64
	// Gap is the trace's tick: capacity changes only at multiples of it.
	Gap time.Duration
	// Length is the time the traces cover (the shortest of them).
	Length time.Duration

	traces map[string]*sim.Trace
}

// Capacity returns how many instances could be held in zone at d since the trace's start.
func (m *Market) Capacity(zone string, d time.Duration) int {
	t, ok := m.traces[zone]
	if !ok {
		return 0
	}
	return t.CountAt(d)
}

// LoadMarket reads a spot-traces directory (sim.LoadSkyPilotDir: one file per zone, named
// <zone>_<gpu>_<count>.json) and prices its instance type from the AWS catalog. The market
// is of one instance type (the simulator plans one machine shape): with instanceTypes given,
// the traces of the first of them the directory has; without, the directory's only type. A
// directory of several types (the public 1-node V100 trace holds p3.2xlarge and p3.16xlarge
// files side by side) is refused without a choice, naming the types and their zones. The
// files left out (GPUs the catalog has no type for) are returned for the caller to show.
func LoadMarket(dir string, instanceTypes ...string) (*Market, []string, error) {
	traces, skipped, err := sim.LoadSkyPilotDir(dir)
	if err != nil {
		return nil, skipped, err
	}
	if traces, err = OneInstanceType(dir, traces, instanceTypes); err != nil {
		return nil, skipped, err
	}
	m, err := NewMarket(dir, traces)
	return m, skipped, err
}

// OneInstanceType keeps the traces of one instance type: the first of want that source
// (a directory, for messages) has, or its only one.
func OneInstanceType(source string, traces map[sim.Key]*sim.Trace, want []string) (map[sim.Key]*sim.Trace, error) {
	zones := map[string][]string{}
	for k := range traces {
		zones[k.InstanceType] = append(zones[k.InstanceType], k.Zone)
	}
	types := make([]string, 0, len(zones))
	for typ := range zones {
		sort.Strings(zones[typ])
		types = append(types, typ)
	}
	sort.Strings(types)
	has := make([]string, len(types))
	for i, typ := range types {
		has[i] = fmt.Sprintf("%s (%s)", typ, strings.Join(zones[typ], ", "))
	}
	pick := ""
	for _, w := range want {
		if _, ok := zones[w]; ok {
			pick = w
			break
		}
	}
	switch {
	case len(want) > 0 && pick == "":
		return nil, fmt.Errorf("policy market %s: no traces of %s; it has %s", source, strings.Join(want, ", "), strings.Join(has, "; "))
	case pick == "" && len(types) > 1:
		return nil, fmt.Errorf("policy market %s: traces of %d instance types, %s; the simulator plans one: choose it with --instance-type (or the spec's resources.instance_types)",
			source, len(types), strings.Join(has, "; "))
	case pick == "":
		return traces, nil
	}
	out := map[sim.Key]*sim.Trace{}
	for k, t := range traces {
		if k.InstanceType == pick {
			out[k] = t
		}
	}
	return out, nil
}

// NewMarket builds a market from traces keyed by zone and instance type (all of one type).
func NewMarket(source string, traces map[sim.Key]*sim.Trace) (*Market, error) {
	m := &Market{Source: source, SpotPrice: map[string]float64{}, traces: map[string]*sim.Trace{}}
	for k, t := range traces {
		if m.InstanceType != "" && k.InstanceType != m.InstanceType {
			return nil, fmt.Errorf("policy market %s: traces of %s and %s: one instance type per directory",
				source, m.InstanceType, k.InstanceType)
		}
		if t.Unit != sim.Instances {
			return nil, fmt.Errorf("policy market %s: trace %s counts %s, not instances", source, t.Source, t.Unit)
		}
		m.InstanceType = k.InstanceType
		m.traces[k.Zone] = t
		m.Zones = append(m.Zones, k.Zone)
	}
	if len(m.Zones) == 0 {
		return nil, fmt.Errorf("policy market %s: no traces", source)
	}
	sort.Strings(m.Zones)
	it, ok := catalog.Default().Lookup("aws", m.InstanceType)
	if !ok {
		return nil, fmt.Errorf("policy market %s: instance type %s is not in the AWS catalog", source, m.InstanceType)
	}
	m.GPUsPerInst = max(it.GPUs, 1)
	m.GPU = it.GPUType
	for i, z := range m.Zones {
		od, ok := it.OnDemand[catalog.RegionOf("aws", z)]
		if !ok {
			return nil, fmt.Errorf("policy market %s: the catalog has no on-demand price of %s in %s", source, m.InstanceType, z)
		}
		// One on-demand price for the market: the highest of its regions (they agree for the
		// bundled types), so the on-demand baseline is never flattered.
		m.OnDemandPrice = max(m.OnDemandPrice, od)
		m.SpotPrice[z] = round4(od * (1 - it.SpotDiscount))
		t := m.traces[z]
		end := t.Steps[len(t.Steps)-1].At + t.Gap
		if i == 0 || end < m.Length {
			m.Length = end
		}
		if t.Gap > m.Gap {
			m.Gap = t.Gap
		}
	}
	if m.Gap <= 0 {
		m.Gap = 5 * time.Minute
	}
	return m, nil
}

// provider is the market's cloud, aws by default.
func (m *Market) provider() string {
	if m.Provider == "" {
		return "aws"
	}
	return m.Provider
}

// round4 rounds a price to the 4 decimals EC2 quotes spot prices in.
func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// Only keeps the zones listed (all of them must have a trace), so that a job restricted to
// some zones meets only their capacity.
func (m *Market) Only(zones []string) (*Market, error) {
	if len(zones) == 0 {
		return m, nil
	}
	out := *m
	out.Zones, out.traces = nil, map[string]*sim.Trace{}
	for _, z := range zones {
		t, ok := m.traces[z]
		if !ok {
			return nil, fmt.Errorf("policy market %s: no trace of zone %q (it has %v)", m.Source, z, m.Zones)
		}
		if _, dup := out.traces[z]; !dup {
			out.traces[z] = t
			out.Zones = append(out.Zones, z)
		}
	}
	sort.Strings(out.Zones)
	return &out, nil
}
