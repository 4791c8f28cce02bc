package gcp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	compute "cloud.google.com/go/compute/apiv1"
	"google.golang.org/api/option"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/catalog"
)

// ProviderName is the name of this provider in offerings, instances and errors.
const ProviderName = "gcp"

// Provider is cloud.Provider over Compute Engine. Safe for concurrent use.
type Provider struct {
	opts   Options
	inst   InstancesAPI
	ops    ZoneOperationsAPI
	zones  []string
	closer func() error

	mu sync.Mutex
	// seen is the last view of each VM this provider created, listed or described: its
	// zone saves a search across zones, and the rest describes a VM that a preemption
	// already deleted.
	seen map[string]cloud.Instance
}

var _ cloud.Provider = (*Provider)(nil)

// New connects to Compute Engine (or to opts.Endpoint) with the REST clients.
func New(ctx context.Context, opts Options) (*Provider, error) {
	var copts []option.ClientOption
	if opts.Endpoint != "" {
		copts = append(copts, option.WithEndpoint(strings.TrimRight(opts.Endpoint, "/")), option.WithoutAuthentication())
	}
	copts = append(copts, opts.ClientOptions...)
	ic, err := compute.NewInstancesRESTClient(ctx, copts...)
	if err != nil {
		return nil, fmt.Errorf("creating compute instances client, %w", err)
	}
	oc, err := compute.NewZoneOperationsRESTClient(ctx, copts...)
	if err != nil {
		ic.Close()
		return nil, fmt.Errorf("creating compute zone operations client, %w", err)
	}
	p, err := NewWithClients(opts, ic, oc)
	if err != nil {
		ic.Close()
		oc.Close()
		return nil, err
	}
	p.closer = func() error { return errors.Join(ic.Close(), oc.Close()) }
	return p, nil
}

// NewWithClients builds a Provider over the given clients.
func NewWithClients(opts Options, inst InstancesAPI, ops ZoneOperationsAPI) (*Provider, error) {
	if opts.Project == "" {
		return nil, errors.New("gcp: a project is required")
	}
	opts = opts.withDefaults()
	p := &Provider{opts: opts, inst: inst, ops: ops, seen: map[string]cloud.Instance{}}
	p.zones = resolveZones(opts)
	if len(p.zones) == 0 {
		return nil, fmt.Errorf("gcp: no zones: none given and none in the catalog for regions %v", opts.Regions)
	}
	return p, nil
}

// resolveZones picks the zones to offer and search: those given, else the catalog's GCP
// zones in the given regions (or all of them).
func resolveZones(o Options) []string {
	if len(o.Zones) > 0 {
		return sortedUnique(o.Zones)
	}
	var out []string
	for _, off := range o.Catalog.Offerings(ProviderName) {
		if len(o.Regions) == 0 || contains(o.Regions, off.Region) {
			out = append(out, off.Zone)
		}
	}
	return sortedUnique(out)
}

// Close releases the clients New created.
func (p *Provider) Close() error {
	if p.closer == nil {
		return nil
	}
	return p.closer()
}

// Name is "gcp".
func (p *Provider) Name() string { return ProviderName }

// Zones are the zones the provider offers and searches.
func (p *Provider) Zones() []string { return append([]string(nil), p.zones...) }

// Offerings lists the catalog's GCP shapes in the provider's zones. Prices are catalog
// estimates (see the package doc); SpotCapacity is -1.
func (p *Provider) Offerings(_ context.Context, f cloud.OfferingFilter) ([]cloud.Offering, error) {
	out := []cloud.Offering{}
	for _, o := range p.opts.Catalog.Offerings(ProviderName) {
		if contains(p.zones, o.Zone) && f.Match(o) {
			out = append(out, o)
		}
	}
	return out, nil
}

// offering finds the catalog's offering of shape in zone, for prices.
func (p *Provider) offering(zone, shape string) (cloud.Offering, bool) {
	for _, o := range p.opts.Catalog.Offerings(ProviderName) {
		if o.Zone == zone && o.InstanceType == shape {
			return o, true
		}
	}
	return cloud.Offering{}, false
}

// remember records the latest view of a VM.
func (p *Provider) remember(inst cloud.Instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[inst.ID] = inst
}

func (p *Provider) forget(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.seen, id)
}

func (p *Provider) lastSeen(id string) (cloud.Instance, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	inst, ok := p.seen[id]
	return inst, ok
}

// zonesFor lists the zones to look for VM id in: the one it was seen in (a VM never moves),
// or all of the provider's zones for a VM this provider has not seen.
func (p *Provider) zonesFor(id string) []string {
	if inst, ok := p.lastSeen(id); ok && inst.Zone != "" {
		return []string{inst.Zone}
	}
	return p.zones
}

// shapeOf returns the catalog's description of a shape name, or one derived from the
// naming convention when the catalog does not list it, so a shape new to GCE can still be
// asked for.
func (p *Provider) shapeOf(name string) catalog.InstanceType {
	if t, ok := p.opts.Catalog.Lookup(ProviderName, name); ok {
		if t.MachineType == "" {
			t.MachineType, t.AcceleratorType, t.AcceleratorCount = catalog.SplitAttachedName(name)
		}
		return t
	}
	mt, acc, n := catalog.SplitAttachedName(name)
	return catalog.InstanceType{Provider: ProviderName, Name: name, MachineType: mt, AcceleratorType: acc,
		AcceleratorCount: n, GPUs: n}
}

// shapeNamed is the inverse of shapeOf: the catalog shape of a VM's machine type and
// attached accelerators. Machine types that carry their GPUs (A2, A3, G2) match on the
// machine type alone, since GCE lists their built-in GPUs as guest accelerators too.
func (p *Provider) shapeNamed(machineType, accelerator string, count int) catalog.InstanceType {
	for _, t := range p.opts.Catalog.Types {
		if t.Provider != ProviderName || t.MachineType != machineType {
			continue
		}
		if t.AcceleratorType == "" || (t.AcceleratorType == accelerator && t.AcceleratorCount == count) {
			return t
		}
	}
	return p.shapeOf(catalog.AttachedName(machineType, accelerator, count))
}

func contains(set []string, v string) bool {
	for _, s := range set {
		if s == v {
			return true
		}
	}
	return false
}

func sortedUnique(in []string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
