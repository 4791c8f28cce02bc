package planner

import "sort"

// Turning what the programme found into plans: an endpoint for every stage, pools for every
// replica.

// placeStages picks the endpoint (zone and machine size) of every stage among its class's
// subs: beside the stage before when there is room, else where most GPUs are left; if that
// strands a stage, widest stages first.
func (s *search) placeStages(f *found) ([]Endpoint, bool) {
	at := make([]Endpoint, len(f.stages))
	multi := false
	for i, st := range f.stages {
		c := s.classes[st.op.cls]
		at[i] = c.subs[0].ep
		multi = multi || len(c.subs) > 1
	}
	if !multi {
		return at, true // one endpoint per class: the programme counted exactly
	}
	try := func(order []int, beside bool) bool {
		free := make([][]int, len(s.classes))
		for k, c := range s.classes {
			for _, u := range c.subs {
				free[k] = append(free[k], u.gpus)
			}
		}
		for _, i := range order {
			st := f.stages[i]
			k, need := st.op.cls, f.d*st.op.tp
			c := s.classes[k]
			best := -1
			for x, u := range c.subs {
				if !u.holds(st.op.tp) || free[k][x] < need {
					continue
				}
				if beside && i > 0 && at[i-1].Zone == u.ep.Zone {
					best = x
					break
				}
				if best < 0 || free[k][x] > free[k][best] {
					best = x
				}
			}
			if best < 0 {
				return false
			}
			free[k][best] -= need
			at[i] = c.subs[best].ep
		}
		return true
	}
	order := make([]int, len(f.stages))
	for i := range order {
		order[i] = i
	}
	if try(order, true) {
		return at, true
	}
	sort.SliceStable(order, func(x, y int) bool { return f.stages[order[x]].op.tp > f.stages[order[y]].op.tp })
	return at, try(order, false)
}

// materialise turns a found plan into a Plan: every stage gets d replicas in one zone of
// its class, and each zone's GPUs are handed out cheapest pool first (widest TP first, so
// machines pack exactly).
func (s *search) materialise(f *found) (*Plan, bool) {
	return s.materialiseFrom(f, false)
}

// materialiseFrom is materialise; with keep, each zone hands out the pools a replan prefers
// (the GPUs the job holds) before cheaper ones.
func (s *search) materialiseFrom(f *found, keep bool) (*Plan, bool) {
	p := &Plan{Model: s.req.Model.Name, GlobalBatch: s.req.GlobalBatch, MicroBatch: f.mbs}
	p.Stages = make([]Stage, len(f.stages))
	for i, st := range f.stages {
		p.Stages[i] = Stage{FirstLayer: st.a, LastLayer: st.b, Replicas: make([]Replica, f.d)}
	}
	at, ok := s.placeStages(f)
	if !ok {
		return nil, false
	}
	for k, c := range s.classes {
		pools := c.pools
		if keep {
			pools = c.keepOrder()
		}
		for _, u := range c.subs {
			var idx []int
			for i, st := range f.stages {
				if st.op.cls == k && at[i] == u.ep {
					idx = append(idx, i)
				}
			}
			if len(idx) == 0 {
				continue
			}
			sort.SliceStable(idx, func(x, y int) bool { return f.stages[idx[x]].op.tp > f.stages[idx[y]].op.tp })
			var here []Pool
			for _, pl := range pools {
				if pl.Endpoint() == u.ep {
					here = append(here, pl)
				}
			}
			left := make([]int, len(here))
			for i, pl := range here {
				left[i] = pl.GPUs
			}
			cur := 0
			for _, i := range idx {
				tp := f.stages[i].op.tp
				for j := 0; j < f.d; j++ {
					for cur < len(left) && left[cur] < tp {
						cur++
					}
					if cur == len(left) {
						return nil, false
					}
					left[cur] -= tp
					pl := here[cur]
					p.Stages[i].Replicas[j] = Replica{GPU: pl.GPU, TP: tp, Zone: pl.Zone, Region: pl.Region,
						GPUsPerNode: pl.GPUsPerNode, InstanceType: pl.InstanceType, USDPerGPUHour: pl.USDPerGPUHour, Spot: pl.Spot}
				}
			}
		}
	}
	return p, true
}
