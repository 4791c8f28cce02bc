package catalog

import (
	"regexp"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/gpu"
)

var zonePattern = map[string]*regexp.Regexp{
	"aws": regexp.MustCompile(`^[a-z]{2}-[a-z]+-\d[a-z]$`),
	"gcp": regexp.MustCompile(`^[a-z]+-[a-z]+\d+-[a-z]$`),
}

func TestEveryTypeIsComplete(t *testing.T) {
	for _, typ := range Default().Types {
		t.Run(typ.Provider+"/"+typ.Name, func(t *testing.T) {
			assert.True(t, gpu.Known(typ.GPUType), "unknown GPU type %q", typ.GPUType)
			assert.Positive(t, typ.GPUs)
			assert.Positive(t, typ.VCPUs)
			assert.Positive(t, typ.MemoryGiB)
			assert.Greater(t, typ.SpotDiscount, 0.0)
			assert.Less(t, typ.SpotDiscount, 1.0)
			require.NotEmpty(t, typ.Zones)
			seen := map[string]bool{}
			for _, z := range typ.Zones {
				assert.False(t, seen[z], "zone %s listed twice", z)
				seen[z] = true
				assert.Regexp(t, zonePattern[typ.Provider], z)
				region := RegionOf(typ.Provider, z)
				assert.NotEqual(t, z, region)
				assert.Contains(t, KnownRegions(typ.Provider), region, "zone %s", z)
				price, ok := typ.OnDemand[region]
				if assert.True(t, ok, "no on-demand price for %s (zone %s)", region, z) {
					assert.Positive(t, price)
				}
			}
			for region := range typ.OnDemand {
				assert.Contains(t, KnownRegions(typ.Provider), region)
			}
			if typ.Provider == "gcp" {
				assert.NotEmpty(t, typ.MachineType)
				if typ.AcceleratorType != "" {
					assert.Equal(t, typ.GPUs, typ.AcceleratorCount)
					assert.Equal(t, AttachedName(typ.MachineType, typ.AcceleratorType, typ.AcceleratorCount), typ.Name)
				} else {
					assert.Equal(t, typ.Name, typ.MachineType)
				}
			}
		})
	}
}

func TestNoDuplicateNames(t *testing.T) {
	seen := map[string]bool{}
	for _, typ := range Default().Types {
		key := typ.Provider + "/" + typ.Name
		assert.False(t, seen[key], "duplicate %s", key)
		seen[key] = true
	}
}

func TestRequiredShapesArePresent(t *testing.T) {
	c := Default()
	want := map[string]map[string]gpu.Type{
		"aws": {
			"p3.2xlarge": gpu.V100, "p3.8xlarge": gpu.V100, "p3.16xlarge": gpu.V100, "p3dn.24xlarge": gpu.V100_32,
			"p4d.24xlarge": gpu.A100_40, "p4de.24xlarge": gpu.A100_80, "p5.48xlarge": gpu.H100,
			"p5en.48xlarge": gpu.H200, "g5.xlarge": gpu.A10G, "g5.2xlarge": gpu.A10G, "g5.12xlarge": gpu.A10G,
			"g5.48xlarge": gpu.A10G, "g6.xlarge": gpu.L4, "g6.12xlarge": gpu.L4, "g6.48xlarge": gpu.L4,
			"g4dn.xlarge": gpu.T4, "g4dn.12xlarge": gpu.T4, "g4dn.metal": gpu.T4,
		},
		"gcp": {
			"a2-highgpu-1g": gpu.A100_40, "a2-highgpu-8g": gpu.A100_40, "a2-ultragpu-1g": gpu.A100_80,
			"a2-ultragpu-8g": gpu.A100_80, "a3-highgpu-8g": gpu.H100, "g2-standard-4": gpu.L4,
			"g2-standard-96": gpu.L4, "n1-standard-8+nvidia-tesla-v100:1": gpu.V100,
			"n1-standard-8+nvidia-tesla-v100:8": gpu.V100, "n1-standard-8+nvidia-tesla-t4:1": gpu.T4,
			"n1-standard-16+nvidia-tesla-t4:4": gpu.T4,
		},
	}
	for provider, types := range want {
		for name, g := range types {
			typ, ok := c.Lookup(provider, name)
			if assert.True(t, ok, "%s %s missing", provider, name) {
				assert.Equal(t, g, typ.GPUType, name)
			}
		}
	}
}

func TestRequiredZones(t *testing.T) {
	c := Default()
	assert.Subset(t, c.Zones("aws"), []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f",
		"us-east-2a", "us-east-2b", "us-east-2c", "us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"})
	assert.Subset(t, c.Zones("gcp"), []string{"us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f",
		"us-west1-b", "europe-west4-a", "europe-west4-b"})

	// Every zone with a SkyPilot spot trace must offer p3.2xlarge, so traces can be replayed.
	p3, ok := c.Lookup("aws", "p3.2xlarge")
	require.True(t, ok)
	assert.Subset(t, p3.Zones, []string{"us-east-1a", "us-east-1c", "us-east-1d", "us-east-1f",
		"us-east-2a", "us-east-2b", "us-west-2a", "us-west-2b", "us-west-2c"})
}

func TestLookup(t *testing.T) {
	c := Default()
	typ, ok := c.Lookup("gcp", "n1-standard-8+nvidia-tesla-v100:4")
	require.True(t, ok)
	assert.Equal(t, "n1-standard-8", typ.MachineType)
	assert.Equal(t, "nvidia-tesla-v100", typ.AcceleratorType)
	assert.Equal(t, 4, typ.AcceleratorCount)
	assert.Equal(t, 4, typ.GPUs)

	_, ok = c.Lookup("aws", "a2-highgpu-1g")
	assert.False(t, ok, "a GCP shape must not be found under aws")
	_, ok = c.Lookup("aws", "p9.nonexistent")
	assert.False(t, ok)
}

func TestOfferingsSortedAndComplete(t *testing.T) {
	c := Default()
	for _, provider := range c.Providers() {
		offers := c.Offerings(provider)
		sorted := sort.SliceIsSorted(offers, func(i, j int) bool {
			if offers[i].Zone != offers[j].Zone {
				return offers[i].Zone < offers[j].Zone
			}
			return offers[i].InstanceType < offers[j].InstanceType
		})
		assert.True(t, sorted, provider)

		// One offering per (type, zone), none dropped for a missing price.
		want := 0
		for _, typ := range c.Types {
			if typ.Provider == provider {
				want += len(typ.Zones)
			}
		}
		assert.Len(t, offers, want, provider)

		seen := map[cloud.OfferingKey]bool{}
		for _, o := range offers {
			k := o.Key(cloud.Spot)
			assert.False(t, seen[k], "duplicate offering %s", k)
			seen[k] = true
			assert.Equal(t, provider, o.Provider)
			assert.Equal(t, RegionOf(provider, o.Zone), o.Region)
			assert.Positive(t, o.OnDemandPrice)
			assert.Positive(t, o.SpotPrice)
			assert.Less(t, o.SpotPrice, o.OnDemandPrice)
			assert.Equal(t, -1, o.SpotCapacity)
			assert.True(t, gpu.Known(o.GPUType))
			assert.Positive(t, o.GPUsPerInstance)
		}
	}
}

func TestProvidersZonesRegions(t *testing.T) {
	c := Default()
	assert.Equal(t, []string{"aws", "gcp"}, c.Providers())
	assert.Equal(t, []string{"us-east-1", "us-east-2", "us-west-2"}, c.Regions("aws"))
	assert.Equal(t, []string{"europe-west4", "us-central1", "us-west1"}, c.Regions("gcp"))
	assert.True(t, sort.StringsAreSorted(c.Zones("aws")))
	assert.Empty(t, c.Zones("azure"))
}

func TestRegionOf(t *testing.T) {
	assert.Equal(t, "us-east-1", RegionOf("aws", "us-east-1a"))
	assert.Equal(t, "us-central1", RegionOf("gcp", "us-central1-f"))
	assert.Equal(t, "europe-west4", RegionOf("gcp", "europe-west4-b"))
}

func TestAttachedName(t *testing.T) {
	assert.Equal(t, "n1-standard-8+nvidia-tesla-v100:1", AttachedName("n1-standard-8", "nvidia-tesla-v100", 1))
}

func TestAttachedNameRoundTrip(t *testing.T) {
	assert.Equal(t, "n1-standard-8+nvidia-tesla-v100:2", AttachedName("n1-standard-8", "nvidia-tesla-v100", 2))
	assert.Equal(t, "a2-highgpu-1g", AttachedName("a2-highgpu-1g", "", 0), "a machine type that carries its GPUs")
	mt, acc, n := SplitAttachedName("n1-standard-8+nvidia-tesla-v100:2")
	assert.Equal(t, []any{"n1-standard-8", "nvidia-tesla-v100", 2}, []any{mt, acc, n})
	mt, acc, n = SplitAttachedName("a2-highgpu-1g")
	assert.Equal(t, []any{"a2-highgpu-1g", "", 0}, []any{mt, acc, n})
}
