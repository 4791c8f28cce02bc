// Package catalog lists the real instance types that carry GPUs on AWS and GCP: their GPU
// type and count, the zones that offer them, published on-demand prices and typical spot
// discounts. The price tables say where and when they were taken; prices change, so treat
// them as a planning estimate, and prefer a provider's live spot prices where it has them.
package catalog

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/gpu"
)

// InstanceType is one GPU instance shape of one provider.
type InstanceType struct {
	Provider string
	// Name is the schooner name of the shape: the EC2 instance type (p4d.24xlarge), the GCE
	// machine type when it carries its GPUs (a2-highgpu-1g), or for N1 shapes with attached
	// accelerators "<machine type>+<accelerator>:<count>" (n1-standard-8+nvidia-tesla-v100:1).
	Name      string
	GPUType   gpu.Type
	GPUs      int
	VCPUs     int
	MemoryGiB float64
	// MachineType, AcceleratorType and AcceleratorCount are what the GCE API needs to create
	// the shape (set for GCP only).
	MachineType      string
	AcceleratorType  string
	AcceleratorCount int
	// OnDemand is USD per instance-hour by region.
	OnDemand map[string]float64
	// SpotDiscount is the typical fraction below on-demand that spot sells at (0.7 = 70%
	// cheaper), used where no live spot price is available.
	SpotDiscount float64
	// Zones that offer the shape.
	Zones []string
}

// Catalog is a set of instance types.
type Catalog struct {
	Types []InstanceType
}

// Default is the built-in catalog of AWS and GCP GPU shapes.
func Default() *Catalog {
	types := append(append([]InstanceType{}, awsTypes()...), gcpTypes()...)
	return &Catalog{Types: types}
}

// Lookup finds the shape name of provider.
func (c *Catalog) Lookup(provider, name string) (InstanceType, bool) {
	for _, t := range c.Types {
		if t.Provider == provider && t.Name == name {
			return t, true
		}
	}
	return InstanceType{}, false
}

// Offerings expands the catalog of provider into one offering per (shape, zone) with the
// region's on-demand price and the typical spot price. SpotCapacity is -1 (unknown).
func (c *Catalog) Offerings(provider string) []cloud.Offering {
	var out []cloud.Offering
	for _, t := range c.Types {
		if t.Provider != provider {
			continue
		}
		for _, z := range t.Zones {
			region := RegionOf(provider, z)
			od, ok := t.OnDemand[region]
			if !ok {
				continue
			}
			out = append(out, cloud.Offering{
				Provider: provider, Region: region, Zone: z, InstanceType: t.Name,
				GPUType: t.GPUType, GPUsPerInstance: t.GPUs,
				OnDemandPrice: od, SpotPrice: od * (1 - t.SpotDiscount), SpotCapacity: -1,
			})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Zone != out[j].Zone {
			return out[i].Zone < out[j].Zone
		}
		return out[i].InstanceType < out[j].InstanceType
	})
	return out
}

// RegionOf derives the region of a zone: AWS zones add a letter (us-east-1a → us-east-1),
// GCP zones add "-<letter>" (us-central1-a → us-central1).
func RegionOf(provider, zone string) string {
	if provider == "gcp" {
		if i := strings.LastIndex(zone, "-"); i > 0 {
			return zone[:i]
		}
		return zone
	}
	if n := len(zone); n > 0 && zone[n-1] >= 'a' && zone[n-1] <= 'z' {
		return zone[:n-1]
	}
	return zone
}

// AttachedName is the schooner name of a GCE machine with accelerators attached:
// AttachedName("n1-standard-8", "nvidia-tesla-v100", 1) is "n1-standard-8+nvidia-tesla-v100:1".
// Without an accelerator it is the machine type alone (a2-highgpu-1g carries its GPUs).
func AttachedName(machine, accelerator string, count int) string {
	if accelerator == "" || count <= 0 {
		return machine
	}
	return machine + "+" + accelerator + ":" + strconv.Itoa(count)
}

// SplitAttachedName is the inverse of AttachedName: the machine type, the attached
// accelerator and its count ("" and 0 for a machine type that carries its GPUs). A missing
// or unreadable count means one accelerator.
func SplitAttachedName(name string) (machine, accelerator string, count int) {
	mt, rest, ok := strings.Cut(name, "+")
	if !ok {
		return name, "", 0
	}
	acc, n, ok := strings.Cut(rest, ":")
	if !ok {
		return mt, acc, 1
	}
	count, err := strconv.Atoi(n)
	if err != nil || count < 1 {
		count = 1
	}
	return mt, acc, count
}

// Providers lists the providers in the catalog, sorted.
func (c *Catalog) Providers() []string {
	set := map[string]bool{}
	for _, t := range c.Types {
		set[t.Provider] = true
	}
	return sortedKeys(set)
}

// Zones lists the zones of provider that offer at least one shape, sorted.
func (c *Catalog) Zones(provider string) []string {
	set := map[string]bool{}
	for _, t := range c.Types {
		if t.Provider == provider {
			for _, z := range t.Zones {
				set[z] = true
			}
		}
	}
	return sortedKeys(set)
}

// Regions lists the regions of provider's zones, sorted.
func (c *Catalog) Regions(provider string) []string {
	set := map[string]bool{}
	for _, z := range c.Zones(provider) {
		set[RegionOf(provider, z)] = true
	}
	return sortedKeys(set)
}

// KnownRegions lists the regions the built-in tables were written for, by provider; a zone
// of the default catalog always falls in one of them.
func KnownRegions(provider string) []string {
	switch provider {
	case "aws":
		return append([]string(nil), awsRegions...)
	case "gcp":
		return append([]string(nil), gcpRegions...)
	}
	return nil
}

func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// round5 rounds a derived price to five decimals, the precision the price pages use.
func round5(v float64) float64 { return math.Round(v*1e5) / 1e5 }
