package catalog

import "github.com/schooner-ml/schooner/gpu"

// awsTypes: SEED ONLY, to be completed with sources and dates (see the package doc).
func awsTypes() []InstanceType {
	return []InstanceType{
		{Provider: "aws", Name: "p3.2xlarge", GPUType: gpu.V100, GPUs: 1, VCPUs: 8, MemoryGiB: 61,
			OnDemand: map[string]float64{"us-east-1": 3.06, "us-east-2": 3.06, "us-west-2": 3.06}, SpotDiscount: 0.7,
			Zones: []string{"us-east-1a", "us-east-1c", "us-east-1d", "us-east-1f", "us-east-2a", "us-east-2b", "us-west-2a", "us-west-2b", "us-west-2c"}},
	}
}
