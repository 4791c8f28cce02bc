package catalog

import "github.com/schooner-ml/schooner/gpu"

// AWS regions and zones the catalog covers. EC2 maps zone names to physical zones per
// account, so a zone list below says where a type is generally offered, not a promise for any
// one account; cloud/aws asks DescribeInstanceTypeOfferings for the truth.
var (
	awsEast1 = []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f"}
	awsEast2 = []string{"us-east-2a", "us-east-2b", "us-east-2c"}
	awsWest2 = []string{"us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"}
	// awsP3Zones are the zones of the p3 family, the ones SkyPilot's spot-traces recorded
	// p3.2xlarge availability in among them (us-east-1a/c/d/f, us-east-2a/b, us-west-2a/b/c).
	awsP3Zones = []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f",
		"us-east-2a", "us-east-2b", "us-west-2a", "us-west-2b", "us-west-2c"}
	awsAllUS = concat(awsEast1, awsEast2, awsWest2)
)

// awsRegions are the regions whose zones appear in awsTypes.
var awsRegions = []string{"us-east-1", "us-east-2", "us-west-2"}

// Typical spot discounts per family (fraction below on-demand). Basis: the ratio of EC2 spot
// price history to the on-demand price in us-east-1/us-east-2/us-west-2 as commonly seen in
// 2023-2025 (p3.2xlarge traded near $0.92-0.98 against $3.06, which is also the figure the
// Can't Be Late study used; g4dn.xlarge near $0.16-0.20 against $0.526; g5.xlarge near
// $0.40 against $1.006). The P4/P5 discounts are smaller because AWS cut their on-demand
// prices in June 2025 while spot prices did not fall as far. Rough by nature: the simulator
// drifts around them and cloud/aws reads live spot prices instead.
const (
	awsSpotP3   = 0.68
	awsSpotP3dn = 0.65
	awsSpotP4   = 0.50
	awsSpotP5   = 0.50
	awsSpotG4dn = 0.68
	awsSpotG5   = 0.60
	awsSpotG6   = 0.58
)

// awsTypes lists the EC2 GPU instance types schooner plans with.
//
// On-demand prices: USD per instance-hour, Linux, shared tenancy, from the "Amazon EC2
// On-Demand Pricing" page as listed in November 2025 (cross-checked against an
// instances.vantage.sh export of the AWS Price List dated 2025-11-30). They are the published
// list prices of that date, after AWS's June 2025 price reduction for P4 and P5 instances;
// they are not live and will drift. us-east-1, us-east-2 and us-west-2 share one price for
// each of these types.
//
// Left out: p5e.48xlarge (H200), because AWS sells it through EC2 Capacity Blocks only and
// publishes no on-demand price; p5en.48xlarge is the public H200 shape.
func awsTypes() []InstanceType {
	return []InstanceType{
		// P3: V100 16 GB.
		aws("p3.2xlarge", gpu.V100, 1, 8, 61, 3.06, awsSpotP3, awsP3Zones),
		aws("p3.8xlarge", gpu.V100, 4, 32, 244, 12.24, awsSpotP3, awsP3Zones),
		aws("p3.16xlarge", gpu.V100, 8, 64, 488, 24.48, awsSpotP3, awsP3Zones),
		// p3dn.24xlarge: V100 32 GB, sold in us-east-1 and us-west-2 only.
		aws("p3dn.24xlarge", gpu.V100_32, 8, 96, 768, 31.212, awsSpotP3dn,
			concat([]string{"us-east-1a", "us-east-1c", "us-east-1d", "us-east-1f"}, awsWest2)),
		// P4: A100 40 GB (p4d) and 80 GB (p4de, us-east-1 and us-west-2 only).
		aws("p4d.24xlarge", gpu.A100_40, 8, 96, 1152, 21.957642, awsSpotP4,
			concat(awsEast1, []string{"us-east-2a", "us-east-2b"}, awsWest2)),
		aws("p4de.24xlarge", gpu.A100_80, 8, 96, 1152, 27.44705, awsSpotP4,
			[]string{"us-east-1b", "us-east-1c", "us-west-2b", "us-west-2c"}),
		// P5: H100 (p5) and H200 (p5en).
		aws("p5.48xlarge", gpu.H100, 8, 192, 2048, 55.04, awsSpotP5, awsAllUS),
		aws("p5en.48xlarge", gpu.H200, 8, 192, 2048, 63.296, awsSpotP5,
			concat([]string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"}, awsEast2, awsWest2)),
		// G4dn: T4.
		aws("g4dn.xlarge", gpu.T4, 1, 4, 16, 0.526, awsSpotG4dn, awsAllUS),
		aws("g4dn.2xlarge", gpu.T4, 1, 8, 32, 0.752, awsSpotG4dn, awsAllUS),
		aws("g4dn.12xlarge", gpu.T4, 4, 48, 192, 3.912, awsSpotG4dn, awsAllUS),
		aws("g4dn.metal", gpu.T4, 8, 96, 384, 7.824, awsSpotG4dn, awsAllUS),
		// G5: A10G.
		aws("g5.xlarge", gpu.A10G, 1, 4, 16, 1.006, awsSpotG5, awsAllUS),
		aws("g5.2xlarge", gpu.A10G, 1, 8, 32, 1.212, awsSpotG5, awsAllUS),
		aws("g5.4xlarge", gpu.A10G, 1, 16, 64, 1.624, awsSpotG5, awsAllUS),
		aws("g5.12xlarge", gpu.A10G, 4, 48, 192, 5.672, awsSpotG5, awsAllUS),
		aws("g5.24xlarge", gpu.A10G, 4, 96, 384, 8.144, awsSpotG5, awsAllUS),
		aws("g5.48xlarge", gpu.A10G, 8, 192, 768, 16.288, awsSpotG5, awsAllUS),
		// G6: L4.
		aws("g6.xlarge", gpu.L4, 1, 4, 16, 0.8048, awsSpotG6, awsAllUS),
		aws("g6.2xlarge", gpu.L4, 1, 8, 32, 0.9776, awsSpotG6, awsAllUS),
		aws("g6.4xlarge", gpu.L4, 1, 16, 64, 1.3232, awsSpotG6, awsAllUS),
		aws("g6.12xlarge", gpu.L4, 4, 48, 192, 4.6016, awsSpotG6, awsAllUS),
		aws("g6.24xlarge", gpu.L4, 4, 96, 384, 6.6752, awsSpotG6, awsAllUS),
		aws("g6.48xlarge", gpu.L4, 8, 192, 768, 13.3504, awsSpotG6, awsAllUS),
	}
}

// aws builds an EC2 type whose on-demand price is the same in every region of its zones,
// which holds for all the US regions listed here.
func aws(name string, g gpu.Type, gpus, vcpus int, mem, price, spotDiscount float64, zones []string) InstanceType {
	od := map[string]float64{}
	for _, z := range zones {
		od[RegionOf("aws", z)] = price
	}
	return InstanceType{Provider: "aws", Name: name, GPUType: g, GPUs: gpus, VCPUs: vcpus, MemoryGiB: mem,
		OnDemand: od, SpotDiscount: spotDiscount, Zones: append([]string(nil), zones...)}
}

// concat joins zone lists into a new slice.
func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
