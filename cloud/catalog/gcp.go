package catalog

import (
	"fmt"

	"github.com/schooner-ml/schooner/gpu"
)

// GCP zones the catalog covers: Sailor's zones (us-central1-a/b/c/f, us-west1-b) and the
// europe-west4 zones of each family.
var (
	gcpCentral1 = []string{"us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f"}
	// gcpN1GPUZones offer both V100 and T4 on N1.
	gcpN1GPUZones = concat(gcpCentral1, []string{"us-west1-a", "us-west1-b"},
		[]string{"europe-west4-a", "europe-west4-b", "europe-west4-c"})
	gcpA2Zones      = concat(gcpCentral1, []string{"us-west1-b", "europe-west4-a", "europe-west4-b"})
	gcpA2UltraZones = []string{"us-central1-a", "us-central1-c", "europe-west4-a"}
	gcpA3Zones      = []string{"us-central1-a", "us-central1-b", "us-central1-c", "us-west1-a", "us-west1-b",
		"europe-west4-b", "europe-west4-c"}
	gcpG2Zones = []string{"us-central1-a", "us-central1-b", "us-central1-c", "us-west1-a", "us-west1-b",
		"us-west1-c", "europe-west4-a", "europe-west4-b", "europe-west4-c"}
)

// gcpRegions are the regions whose zones appear in gcpTypes.
var gcpRegions = []string{"europe-west4", "us-central1", "us-west1"}

// Typical spot discounts per family (fraction below on-demand). Basis: Google publishes spot
// prices beside on-demand ones on the "GPU pricing" and "VM instance pricing" pages; in
// us-central1 the A100 40 GB GPU lists near $1.15 spot against $2.93, the A2 machine part
// $0.296 against $0.739 (both about 60% off), H100 and its A3 machine part about 75% off, and
// N1 with V100 or T4 about 65-70% off. Google changes spot prices at most about once a month.
const (
	gcpSpotA2 = 0.60
	gcpSpotA3 = 0.75
	gcpSpotG2 = 0.60
	gcpSpotN1 = 0.65
)

// gcpTypes lists the Compute Engine GPU shapes schooner plans with.
//
// On-demand prices: USD per instance-hour (machine plus its GPUs), from the Compute Engine
// "VM instance pricing" (accelerator-optimized A2, A3, G2 and general-purpose N1) and "GPU
// pricing" pages as listed in 2025, cross-checked against SkyPilot's GCP catalog export
// (skypilot-catalog catalogs/v7/gcp/vms.csv, 2025). us-central1 and us-west1 figures are the
// published list prices of that time (the two regions price these shapes alike). For
// europe-west4 the A2 machine parts, N1 machines and the T4/V100 prices are the published
// ones, but the A100 GPU parts and the whole A3 and G2 prices there were not at hand: they are
// estimates, the us-central1 figure times 1.1, the ratio Google applies to the A2 machine part
// in europe-west4. a3-highgpu-8g in us-central1 is the list price as remembered (about
// $88.25) and is the least certain figure here. None of this is live.
//
// Left out: a3-megagpu-8g, whose on-demand price could not be confirmed.
func gcpTypes() []InstanceType {
	var out []InstanceType
	// A2 Standard: A100 40 GB bundled with the machine.
	out = append(out, gcpA2("highgpu", gpu.A100_40, 85, gcpA2Zones,
		[4]float64{3.67339, 7.34677, 14.69354, 29.38708},
		[4]float64{0.81406, 1.62813, 3.25626, 6.51251},
		[4]float64{2.93391, 5.86782, 11.73563, 23.47126})...)
	// A2 Ultra: A100 80 GB.
	out = append(out, gcpA2("ultragpu", gpu.A100_80, 170, gcpA2UltraZones,
		[4]float64{5.06879, 10.13757, 20.27514, 40.55028},
		[4]float64{1.2105, 2.42101, 4.84202, 9.68403},
		[4]float64{3.96917, 7.93834, 15.87668, 31.75336})...)
	out = append(out,
		// A3 High: H100 80 GB.
		gcpBundled("a3-highgpu-8g", gpu.H100, 8, 208, 1872, gcpA3Zones, gcpSpotA3,
			usAndEU(88.2537, gcpEU(88.2537))),
		// G2: L4.
		gcpBundled("g2-standard-4", gpu.L4, 1, 4, 16, gcpG2Zones, gcpSpotG2, usAndEU(0.70683, gcpEU(0.70683))),
		gcpBundled("g2-standard-8", gpu.L4, 1, 8, 32, gcpG2Zones, gcpSpotG2, usAndEU(0.85362, gcpEU(0.85362))),
		gcpBundled("g2-standard-24", gpu.L4, 2, 24, 96, gcpG2Zones, gcpSpotG2, usAndEU(2.00083, gcpEU(2.00083))),
		gcpBundled("g2-standard-48", gpu.L4, 4, 48, 192, gcpG2Zones, gcpSpotG2, usAndEU(4.00166, gcpEU(4.00166))),
		gcpBundled("g2-standard-96", gpu.L4, 8, 96, 384, gcpG2Zones, gcpSpotG2, usAndEU(8.00332, gcpEU(8.00332))))
	// N1 with attached V100 16 GB: n1-standard-8 ($0.38, europe-west4 $0.418) plus
	// $2.48 per GPU ($2.55 in europe-west4).
	for _, n := range []int{1, 2, 4, 8} {
		out = append(out, gcpAttached("n1-standard-8", 8, 30, "nvidia-tesla-v100", gpu.V100, n, 0.38, 0.418, 2.48, 2.55))
	}
	// N1 with attached T4: $0.35 per GPU in all three regions.
	for _, n := range []int{1, 4} {
		out = append(out, gcpAttached("n1-standard-8", 8, 30, "nvidia-tesla-t4", gpu.T4, n, 0.38, 0.418, 0.35, 0.35))
	}
	for _, n := range []int{1, 4} {
		out = append(out, gcpAttached("n1-standard-16", 16, 60, "nvidia-tesla-t4", gpu.T4, n, 0.76, 0.836, 0.35, 0.35))
	}
	return out
}

// gcpEU estimates a europe-west4 price from the us-central1 one where the europe-west4 figure
// was not at hand: times 1.1, the ratio Google applies to the A2 machine part there.
func gcpEU(us float64) float64 { return round5(us * 1.1) }

// gcpA2 builds the 1-, 2-, 4- and 8-GPU sizes of an A2 family (a2-<family>-<n>g), which
// Google sizes alike: 12 vCPUs and memPerGPU GiB of memory per GPU. The arrays are per size:
// us the us-central1/us-west1 price, euMachine the published europe-west4 machine part, and
// usGPU the us-central1 GPU part, which gcpEU scales for europe-west4.
func gcpA2(family string, g gpu.Type, memPerGPU float64, zones []string,
	us, euMachine, usGPU [4]float64) []InstanceType {
	out := make([]InstanceType, 0, 4)
	for i, n := range [4]int{1, 2, 4, 8} {
		out = append(out, gcpBundled(fmt.Sprintf("a2-%s-%dg", family, n), g, n, 12*n, memPerGPU*float64(n),
			zones, gcpSpotA2, usAndEU(us[i], euMachine[i]+gcpEU(usGPU[i]))))
	}
	return out
}

// usAndEU is a price table with one figure for us-central1 and us-west1 and one for
// europe-west4.
func usAndEU(us, eu float64) map[string]float64 {
	return map[string]float64{"us-central1": us, "us-west1": us, "europe-west4": round5(eu)}
}

// gcpBundled builds a machine type that carries its GPUs (A2, A3, G2): the API needs only the
// machine type.
func gcpBundled(name string, g gpu.Type, gpus, vcpus int, mem float64, zones []string, spotDiscount float64,
	od map[string]float64) InstanceType {
	return InstanceType{Provider: "gcp", Name: name, GPUType: g, GPUs: gpus, VCPUs: vcpus, MemoryGiB: mem,
		MachineType: name, OnDemand: od, SpotDiscount: spotDiscount, Zones: zones}
}

// gcpAttached builds an N1 machine with count accelerators attached, priced as the machine
// plus count GPUs, in us-central1/us-west1 and in europe-west4.
func gcpAttached(machine string, vcpus int, mem float64, accel string, g gpu.Type, count int,
	machineUS, machineEU, gpuUS, gpuEU float64) InstanceType {
	return InstanceType{Provider: "gcp", Name: AttachedName(machine, accel, count), GPUType: g, GPUs: count,
		VCPUs: vcpus, MemoryGiB: mem, MachineType: machine, AcceleratorType: accel, AcceleratorCount: count,
		OnDemand:     usAndEU(round5(machineUS+float64(count)*gpuUS), machineEU+float64(count)*gpuEU),
		SpotDiscount: gcpSpotN1, Zones: gcpN1GPUZones}
}
