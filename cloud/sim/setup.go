package sim

import (
	"fmt"
	"slices"
	"sort"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/gpu"
)

// buildOfferings expands the catalog, restricted by the config's filters.
func (m *Market) buildOfferings() error {
	c := m.cfg.Catalog
	providers := c.Providers()
	if err := checkNames("provider", m.cfg.Providers, providers); err != nil {
		return err
	}
	var allZones, allTypes []string
	for _, p := range providers {
		allZones = append(allZones, c.Zones(p)...)
	}
	for _, t := range c.Types {
		allTypes = append(allTypes, t.Name)
	}
	if err := checkNames("zone", m.cfg.Zones, allZones); err != nil {
		return err
	}
	if err := checkNames("instance type", m.cfg.InstanceTypes, allTypes); err != nil {
		return err
	}
	for _, p := range providers {
		if !in(m.cfg.Providers, p) {
			continue
		}
		m.params[p] = m.cfg.params(p)
		for _, base := range c.Offerings(p) {
			if !in(m.cfg.Zones, base.Zone) || !in(m.cfg.InstanceTypes, base.InstanceType) {
				continue
			}
			o := &offering{Offering: base, params: m.params[p], odLimit: -1}
			m.offerings = append(m.offerings, o)
			m.byKey[Key{Zone: base.Zone, InstanceType: base.InstanceType}] = o
			m.zones[base.Zone] = p
			m.types[base.InstanceType] = p
		}
	}
	sort.SliceStable(m.offerings, func(i, j int) bool {
		a, b := m.offerings[i], m.offerings[j]
		if a.Zone != b.Zone {
			return a.Zone < b.Zone
		}
		return a.InstanceType < b.InstanceType
	})
	if len(m.offerings) == 0 {
		return invalidConfig("nothing to simulate: the filters leave no offering")
	}
	return nil
}

// checkConfigKeys makes sure capacity and limit entries name offerings of the catalog, in a
// stable order so the first error reported is always the same. Entries for offerings the
// filters leave out are ignored, so one set of traces can serve markets of any extent.
func (m *Market) checkConfigKeys() error {
	inCatalog := map[Key]bool{}
	for _, p := range m.cfg.Catalog.Providers() {
		for _, o := range m.cfg.Catalog.Offerings(p) {
			inCatalog[Key{Zone: o.Zone, InstanceType: o.InstanceType}] = true
		}
	}
	keys := make([]Key, 0, len(m.cfg.Capacity)+len(m.cfg.OnDemandLimit))
	for k := range m.cfg.Capacity {
		keys = append(keys, k)
	}
	for k, n := range m.cfg.OnDemandLimit {
		if n < 0 {
			return invalidConfig("on-demand limit of %s is negative (%d)", k, n)
		}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		if !inCatalog[k] {
			return &cloud.Error{Kind: cloud.ErrNotFound, Provider: "sim", Code: "UnknownOffering",
				Message: fmt.Sprintf("config names %s, which the catalog does not offer", k)}
		}
	}
	return nil
}

// zoneGPU is a GPU type in a zone.
type zoneGPU struct {
	zone string
	gpu  gpu.Type
}

// tracedZoneGPUs are the (zone, GPU type) pairs whose spot capacity a recorded trace (one
// with a Source: a file, the bundled set) replays for some instance type of the market. A
// capacity set by hand (Constant) claims nothing beyond its own offering.
func (m *Market) tracedZoneGPUs() map[zoneGPU]bool {
	out := map[zoneGPU]bool{}
	for _, o := range m.offerings {
		if t := m.cfg.Capacity[Key{Zone: o.Zone, InstanceType: o.InstanceType}].Trace; t != nil && t.Source != "" {
			out[zoneGPU{zone: o.Zone, gpu: o.GPUType}] = true
		}
	}
	return out
}

// untracedShape is the capacity of an instance type whose zone has a trace for another shape
// of the same GPU: none. A trace measures the GPUs of its type a zone could give; capacity
// invented beside it for the other shapes (a p3.8xlarge beside the traced p3.2xlarge) would
// let a job hold more of those GPUs than the trace allows, and make costs on the simulated
// market disagree with the policy simulator, which knows only the trace.
var untracedShape = Trace{Unit: Instances, Steps: []Step{{At: 0, Count: 0}}}

// startOffering sets an offering's initial capacity and price and schedules what changes
// them. traced are the zones' GPU types some trace covers (tracedZoneGPUs).
func (m *Market) startOffering(o *offering, traced map[zoneGPU]bool) error {
	key := Key{Zone: o.Zone, InstanceType: o.InstanceType}
	if n, ok := m.cfg.OnDemandLimit[key]; ok {
		o.odLimit = n
	}
	c := m.cfg.Capacity[key]
	switch {
	case c.Trace != nil:
		if err := c.Trace.Validate(); err != nil {
			return invalidConfig("capacity of %s: %v", key, err)
		}
		if c.Offset < 0 {
			return invalidConfig("capacity of %s: negative trace offset %s", key, c.Offset)
		}
		o.capacity = newTraceProcess(c.Trace, c.Offset, o.GPUsPerInstance)
	case c.OnOff == nil && traced[zoneGPU{zone: o.Zone, gpu: o.GPUType}]:
		o.capacity = newTraceProcess(&untracedShape, 0, o.GPUsPerInstance)
	default:
		r := stream(m.cfg.Seed, "capacity", o.Provider, o.Zone, o.InstanceType)
		model := DefaultOnOff(r, o.GPUsPerInstance)
		if c.OnOff != nil {
			model = *c.OnOff
		}
		if err := model.validate(); err != nil {
			return invalidConfig("capacity of %s: %v", key, err)
		}
		o.capacity = newOnOffProcess(model, r)
	}
	o.level = o.capacity.initial()
	m.scheduleCapacity(o)
	m.startPrice(o)
	return nil
}

func invalidConfig(format string, args ...any) error {
	return &cloud.Error{Kind: cloud.ErrInvalidRequest, Provider: "sim", Code: "InvalidConfig",
		Message: fmt.Sprintf(format, args...)}
}

// checkNames reports the first of names that known lacks.
func checkNames(what string, names, known []string) error {
	for _, n := range names {
		if !in(known, n) {
			return &cloud.Error{Kind: cloud.ErrNotFound, Provider: "sim", Code: "UnknownName",
				Message: fmt.Sprintf("config names %s %q, which the catalog lacks", what, n)}
		}
	}
	return nil
}

// in reports whether v is in set; an empty set holds everything.
func in(set []string, v string) bool {
	return len(set) == 0 || slices.Contains(set, v)
}
