package catalog

import "github.com/schooner-ml/schooner/gpu"

// gcpTypes: SEED ONLY, to be completed with sources and dates (see the package doc).
func gcpTypes() []InstanceType {
	return []InstanceType{
		{Provider: "gcp", Name: "a2-highgpu-1g", GPUType: gpu.A100_40, GPUs: 1, VCPUs: 12, MemoryGiB: 85,
			MachineType: "a2-highgpu-1g", OnDemand: map[string]float64{"us-central1": 3.67}, SpotDiscount: 0.65,
			Zones: []string{"us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f"}},
	}
}
