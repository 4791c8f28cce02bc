package policy

import "time"

// UniformProgress is Can't Be Late's uniform-progress rule (NSDI'24) for the job's cluster
// (max_gpus in one zone, on spot or on-demand): progress should not fall below the straight
// line from nothing at the start to everything at the deadline (less one restart). Spot is
// used whenever a zone has room for the cluster, except that a job behind the line stays on
// the on-demand cluster it holds; with no spot the job buys on-demand only while it is behind
// the line, and waits otherwise. Its safety net: once a restart more would miss the deadline
// even on on-demand, it stays on on-demand to the end.
func UniformProgress() Maker {
	return Maker{Name: "cant-be-late-uniform", About: "Can't Be Late's uniform progress: on-demand while behind the line",
		New: func() Policy { return &uniform{} }}
}

type uniform struct{ critical bool }

func (u *uniform) Decide(v *View) Request {
	k := v.Job.MaxGPUs
	if v.Deadline <= 0 {
		return Request{Spot: k, Zones: byCapacity(v), Gang: true}
	}
	onDemand := Request{OnDemand: k, Zones: v.Market.Zones}
	od := Placement{v.Market.Zones[0]: k}
	if u.critical || v.TimeLeft() <= v.Runtime(od)+v.Job.Restart {
		u.critical = true
		onDemand.Why = "safety net: one more restart would miss the deadline"
		return onDemand
	}
	usable := v.Deadline - v.Job.Restart
	line := float64(v.Job.Iterations) * float64(v.Elapsed) / float64(max(usable, time.Second))
	behind := v.Done < line
	for z, g := range v.Spot {
		if g == k {
			return Request{Spot: k, Zones: []string{z}, Gang: true}
		}
	}
	onOD := v.OnDemand.GPUs() > 0
	for _, z := range byCapacity(v) {
		if v.Capacity[z] >= k && !(onOD && behind) {
			return Request{Spot: k, Zones: byCapacity(v), Gang: true}
		}
	}
	if behind {
		onDemand.Why = "behind the uniform-progress line with no spot cluster"
		return onDemand
	}
	return Request{}
}
