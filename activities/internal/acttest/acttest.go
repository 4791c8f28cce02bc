// Package acttest holds what the activity packages' tests share.
package acttest

import "github.com/schooner-ml/schooner/cloud"

// Offers is a fake cloud's catalog: two A100 zones of region r1 (r1-a the cheaper) and one
// V100 zone of region r2, all spot with capacity 8.
func Offers() []cloud.Offering {
	return []cloud.Offering{
		{Provider: "fake", Region: "r1", Zone: "r1-a", InstanceType: "p4", GPUType: "A100-40", GPUsPerInstance: 1, SpotPrice: 1, OnDemandPrice: 4, SpotCapacity: 8},
		{Provider: "fake", Region: "r1", Zone: "r1-b", InstanceType: "p4", GPUType: "A100-40", GPUsPerInstance: 1, SpotPrice: 1.1, OnDemandPrice: 4, SpotCapacity: 8},
		{Provider: "fake", Region: "r2", Zone: "r2-a", InstanceType: "v1", GPUType: "V100-16", GPUsPerInstance: 1, SpotPrice: 0.5, OnDemandPrice: 3, SpotCapacity: 8},
	}
}
