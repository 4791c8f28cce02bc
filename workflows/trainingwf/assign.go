package trainingwf

import (
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/training"
)

// assign places the plan's ranks on held instances, survivors first: each instance offers
// its GPUs as slots, and a rank takes TP slots of an instance of its offering. Ranks that do
// not fit become groups of new instances to acquire. Deterministic: instances are taken in
// held order, ranks in rank order.
func assign(replicas []training.PlannedReplica, held []cloud.Instance) ([]training.RankPlacement, []fleet.Group) {
	free := make([]int, len(held))
	for i, in := range held {
		if !in.State.Gone() {
			free[i] = max(in.GPUs, 1)
		}
	}
	type virtual struct {
		key  cloud.OfferingKey
		free int
	}
	var extra []virtual
	var groups []fleet.Group
	var place []training.RankPlacement
	for _, r := range replicas {
		need := max(r.GPUs, 1)
		found := ""
		for i, in := range held {
			if free[i] >= need && in.Zone == r.Key.Zone && in.InstanceType == r.Key.InstanceType && capOf(in) == r.Key.Capacity {
				free[i] -= need
				found = in.ID
				break
			}
		}
		if found == "" {
			placed := false
			for i := range extra {
				if extra[i].key == r.Key && extra[i].free >= need {
					extra[i].free -= need
					placed = true
					break
				}
			}
			if !placed {
				extra = append(extra, virtual{key: r.Key, free: max(r.GPUsPerInstance, need) - need})
				added := false
				for g := range groups {
					if groups[g].Key == r.Key {
						groups[g].Count++
						added = true
					}
				}
				if !added {
					groups = append(groups, fleet.Group{Key: r.Key, Count: 1})
				}
			}
		}
		place = append(place, training.RankPlacement{Rank: r.Rank, Stage: r.Stage, Replica: r.Replica, InstanceID: found})
	}
	return place, groups
}

// capOf is the instance's capacity type, spot when unset.
func capOf(in cloud.Instance) cloud.CapacityType {
	if in.Capacity == "" {
		return cloud.Spot
	}
	return in.Capacity
}
