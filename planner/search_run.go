package planner

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
)

// search is one Search call's state.
type search struct {
	req     Request
	sim     *Sim
	L       int
	classes []*class
	skipped []string // offered GPU types without a profile
	tables  []*mbsTables
	params  [][]float64 // params[tp][k]: parameters of layers 0..k-1, floats
	top     *topK
	merged  bool
	// peakLabels is the most suffixes one task's programme held at once: what the search's
	// memory grows with (tests read it).
	peakLabels atomic.Int64
}

func newSearch(req Request) (*search, error) {
	if err := req.normalise(); err != nil {
		return nil, err
	}
	classes, skipped, err := buildClasses(req.Model, req.Pools, req.preferred)
	if err != nil {
		return nil, err
	}
	if len(classes) == 0 {
		if len(skipped) > 0 {
			return nil, fmt.Errorf("no offered GPU has a profile for %s: offered %s, profiled %s",
				req.Model.Name, offeredGPUTypes(req.Pools), profiledGPUTypes(req.Model))
		}
		return nil, fmt.Errorf("the pools offer no whole machine: every pool has fewer GPUs than its GPUs per node")
	}
	merged := false
	if !req.exactZones && shouldMerge(classes) {
		classes = mergeRegions(classes, req.preferred)
		merged = true
	}
	sim := req.sim
	if sim == nil {
		sim = NewSim(req.Model, req.Network)
	}
	s := &search{req: req, sim: sim, L: req.Model.NumLayers(), classes: classes, skipped: skipped,
		top: newTopK(req.TopK, req.Objective, merged), merged: merged}
	for tp, layers := range req.Model.Mem {
		if tp < 1 || len(layers) != s.L {
			continue
		}
		for len(s.params) <= tp {
			s.params = append(s.params, nil)
		}
		pre := make([]float64, s.L+1)
		for i, l := range layers {
			pre[i+1] = pre[i] + l.ParamsFloats
		}
		s.params[tp] = pre
	}
	for _, mbs := range s.microBatches() {
		if t := s.buildTables(mbs); t != nil {
			s.tables = append(s.tables, t)
		}
	}
	if len(s.tables) == 0 {
		return nil, fmt.Errorf("%s has no profile usable on the offered GPUs (%s) at micro-batch sizes %v with TP within one machine",
			req.Model.Name, offeredGPUTypes(req.Pools), s.microBatches())
	}
	return s, nil
}

// microBatches are the requested sizes, or every size profiled for an offered GPU.
func (s *search) microBatches() []int {
	if len(s.req.MicroBatches) > 0 {
		out := append([]int(nil), s.req.MicroBatches...)
		sort.Ints(out)
		return dedupInts(out)
	}
	var out []int
	for _, c := range s.classes {
		for _, byMBS := range s.req.Model.Compute[c.ep.GPU].Times {
			for mbs := range byMBS {
				out = append(out, mbs)
			}
		}
	}
	sort.Ints(out)
	return dedupInts(out)
}

func dedupInts(s []int) []int {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// priceMatters is true when the programme must keep cheaper suffixes apart from faster
// ones: under the cost objective or a budget.
func (s *search) priceMatters() bool {
	return s.req.Objective == MinCost || s.req.MaxUSDPerIteration > 0
}

// task is one (micro-batch size, D) pair with a lower bound on its best objective.
type task struct {
	t  *mbsTables
	d  int
	lb float64
}

// tasks lists the (mbs, D) pairs worth solving. Only the smallest D of each microbatch count
// N = ceil(gbs / (mbs·D)) is distinct: a larger D with the same N runs the same pipelines
// with more GPUs, a longer all-reduce and more egress. They are ordered by a lower bound on
// the objective, so the first solves give a good threshold and the loop stops as soon as
// no remaining pair can beat the K-th best plan (an exact version of Sailor's H3 and H4);
// ties go to the larger D for throughput and the smaller for cost, as H3 and H4 order them.
func (s *search) tasks() []task {
	var out []task
	maxT := math.Inf(1)
	if s.req.MinItersPerSec > 0 {
		maxT = 1 / s.req.MinItersPerSec
	}
	minPrice := math.Inf(1)
	maxClass := 0
	for _, c := range s.classes {
		minPrice = math.Min(minPrice, c.minPrice)
		maxClass = max(maxClass, c.gpus)
	}
	for _, t := range s.tables {
		gbs := s.req.GlobalBatch
		dmax := min(gbs/t.mbs, maxClass)
		prevN := -1
		for d := 1; d <= dmax; d++ {
			n := (gbs + t.mbs*d - 1) / (t.mbs * d)
			if n == prevN {
				continue
			}
			prevN = n
			units, rate := 0, 0.0
			for k, c := range s.classes {
				u := c.units(d)
				units += u
				rate += float64(u) * t.rho[k]
			}
			if units == 0 || rate <= 0 {
				continue
			}
			w := t.wPre[t.L]
			lbT := math.Max(float64(n-1)*w/math.Min(rate, float64(t.L)*t.etaMax)+w, float64(n)*t.gpuSec/float64(units))
			if lbT > maxT {
				continue
			}
			lbC := math.Max(float64(d)*(float64(n-1)*t.usdSec+w*float64(t.minUnits[t.L])*minPrice)/3600,
				float64(d*t.minUnits[t.L])*minPrice*lbT/3600)
			if s.req.MaxUSDPerIteration > 0 && lbC > s.req.MaxUSDPerIteration {
				continue
			}
			lb := lbT
			if s.req.Objective == MinCost {
				lb = lbC
			}
			out = append(out, task{t: t, d: d, lb: lb})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].lb != out[j].lb {
			return out[i].lb < out[j].lb
		}
		if s.req.Objective == MinCost {
			return out[i].d < out[j].d
		}
		return out[i].d > out[j].d
	})
	return out
}

// explore solves every task that might still hold a plan among the K best, on every core:
// first a quick beam pass over every task for a threshold, then the exact pass.
func (s *search) explore() int {
	tasks := s.tasks()
	var evaluated atomic.Int64
	final := 0 // exact
	if s.merged {
		final = mergedFinalBeam
	}
	for _, beam := range []int{beamWidth, final} {
		var next atomic.Int64
		var wg sync.WaitGroup
		workers := min(runtime.GOMAXPROCS(0), max(1, len(tasks)))
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := &worker{s: s, beam: beam}
				for {
					i := int(next.Add(1) - 1)
					if i >= len(tasks) {
						break
					}
					thrT, thrC := s.top.thresholds()
					thr := thrT
					if s.req.Objective == MinCost {
						thr = thrC
					}
					if tasks[i].lb > thr*(1+1e-12) {
						break // sorted by bound: no later task can do better either
					}
					w.solve(tasks[i].t, tasks[i].d)
					for n := int64(len(w.labels)); ; {
						if p := s.peakLabels.Load(); n <= p || s.peakLabels.CompareAndSwap(p, n) {
							break
						}
					}
				}
				evaluated.Add(w.eval)
			}()
		}
		wg.Wait()
	}
	return int(evaluated.Load())
}

// beamWidth is how many suffixes per key the first, inexact pass keeps; mergedFinalBeam
// how many the second keeps when regions were merged (H6). There the programme's times are
// estimates anyway (stages get their zones afterwards) and the exact pass can take seconds on
// offers of dozens of regions and machine sizes; with at most 64 per key it takes a fraction
// of that and, on the offers tried, finds plans within a few per cent of it.
const (
	beamWidth       = 3
	mergedFinalBeam = 64
)

// run explores, then turns the best labels into plans the simulator re-estimates.
func (s *search) run() (*Result, error) {
	evaluated := s.explore()
	cands := s.candidates(s.top.list())
	if len(cands) == 0 {
		return nil, s.explainNothing()
	}
	if len(cands) > s.req.TopK {
		cands = cands[:s.req.TopK]
	}
	res := &Result{Best: cands[0], Next: cands[1:], Evaluated: evaluated}
	res.Rejected = s.rejections(res)
	return res, nil
}

// candidates assigns pools to found plans, simulates them and orders them by the
// simulator's numbers. Plans the simulator finds out of memory are dropped (they cannot
// occur unless the simulator and the search disagree; the search never returns one).
func (s *search) candidates(fs []*found) []Candidate {
	var out []Candidate
	for _, f := range fs {
		p, ok := s.materialise(f)
		if !ok {
			continue
		}
		est, err := s.sim.Simulate(p)
		if err != nil || !est.Fits {
			continue
		}
		if !s.meets(est) {
			continue
		}
		out = append(out, Candidate{Plan: *p, Estimate: est})
	}
	sort.SliceStable(out, func(i, j int) bool { return s.better(out[i].Estimate, out[j].Estimate) })
	return out
}

// meets reports whether an estimate satisfies the request's budget and throughput floor
// (with a relative tolerance for the simulator's different order of additions).
func (s *search) meets(e Estimate) bool {
	const tol = 1e-9
	if s.req.MaxUSDPerIteration > 0 && e.USDPerIteration > s.req.MaxUSDPerIteration*(1+tol) {
		return false
	}
	if s.req.MinItersPerSec > 0 && e.Throughput < s.req.MinItersPerSec*(1-tol) {
		return false
	}
	return true
}

func (s *search) better(a, b Estimate) bool {
	return objectiveLess(s.req.Objective, a, b)
}

// objectiveLess orders estimates by the objective, then by the other measure.
func objectiveLess(o Objective, a, b Estimate) bool {
	if o == MinCost {
		if a.USDPerIteration != b.USDPerIteration {
			return a.USDPerIteration < b.USDPerIteration
		}
		return a.IterTime < b.IterTime
	}
	if a.IterTime != b.IterTime {
		return a.IterTime < b.IterTime
	}
	return a.USDPerIteration < b.USDPerIteration
}
