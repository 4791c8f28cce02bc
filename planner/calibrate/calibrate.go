package calibrate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

// rounds is how often the compute correction is refitted: the iteration also holds
// communication, which the correction does not scale, so one fit undershoots; a few rounds of
// refitting on the remaining error settle it.
const rounds = 4

// Result is a calibration: the calibrated copy of the profile, what changed, and the errors
// on the cases before and after (in-sample: check on runs kept apart before trusting it).
type Result struct {
	Profile *planner.ModelProfile
	// OverheadBytes is the fitted framework overhead per GPU (was OverheadBefore), on the
	// GPU types that have no overhead of their own in the memory model.
	OverheadBefore, OverheadBytes float64
	// GPUOverheads are the GPU types' own overheads (MemoryModel.OverheadByGPU) that the
	// runs moved: [before, after].
	GPUOverheads map[gpu.Type][2]float64
	// TimeFactors scale each GPU type's measured compute times (1: unchanged).
	TimeFactors   map[gpu.Type]float64
	Before, After Errors
	Notes         []string
}

// Errors are median absolute relative errors over the cases (NaN when there is nothing).
type Errors struct {
	Time, Memory float64
}

// Calibrate fits m to the cases of its model: the framework overhead so the median stage's
// peak memory is met (the overhead shifts every stage's prediction by the same amount, which is
// exactly how a mis-set overhead shows), and, for each GPU type that some case runs on alone,
// a factor on its compute times so the median iteration time is met. Cases of other models
// are an error; a case that does not simulate is an error naming it.
func Calibrate(m *planner.ModelProfile, net *planner.Network, cases []Case) (Result, error) {
	if m == nil || len(cases) == 0 {
		return Result{}, errors.New("calibrating needs a profile and at least one measured case")
	}
	for _, c := range cases {
		if c.Plan.Model != m.Name {
			return Result{}, fmt.Errorf("case %s is a plan of %s, the profile is of %s", c.Name, c.Plan.Model, m.Name)
		}
	}
	cal := clone(m)
	res := Result{Profile: cal, TimeFactors: map[gpu.Type]float64{}}
	before, err := simulateAll(cal, net, cases)
	if err != nil {
		return res, err
	}
	res.Before = errorsOf(cases, before)

	fitOverheads(cal, cases, before, &res)

	// Time: a factor per GPU type, from the cases that run on that type alone.
	byType := map[gpu.Type][]int{}
	for i, c := range cases {
		if g, ok := onlyType(c.Plan); ok {
			byType[g] = append(byType[g], i)
		} else {
			res.Notes = append(res.Notes, fmt.Sprintf("case %s mixes GPU types: used for memory only", c.Name))
		}
	}
	for _, g := range sortedTypes(byType) {
		if cal.Compute[g] == nil {
			res.Notes = append(res.Notes, fmt.Sprintf("no compute table for %s in the profile: its cases are not used for time", g))
			continue
		}
		total := 1.0
		for range rounds {
			est, err := simulateSome(cal, net, cases, byType[g])
			if err != nil {
				return res, err
			}
			var ratios []float64
			for k, i := range byType[g] {
				ratios = append(ratios, cases[i].IterSeconds/est[k].IterTime)
			}
			f := median(ratios)
			scale(cal.Compute[g], f)
			total *= f
		}
		res.TimeFactors[g] = total
		if c := cal.Compute[g]; c != nil {
			c.Source = strings.TrimSpace(fmt.Sprintf("%s; calibrated ×%.4f on %d measured runs", c.Source, total, len(byType[g])))
		}
	}

	after, err := simulateAll(cal, net, cases)
	if err != nil {
		return res, err
	}
	res.After = errorsOf(cases, after)
	return res, nil
}

// fitOverheads moves the framework overheads by the median stage residual (measured minus
// predicted peak memory): a GPU type with its own overhead in the memory model by the
// residuals of the stages on it, the model-wide overhead by those of the other stages.
// Stages whose replicas mix GPU types tell nothing about one type's overhead and count for
// the model-wide one.
func fitOverheads(cal *planner.ModelProfile, cases []Case, before []planner.Estimate, res *Result) {
	mm := &planner.MemoryModel{BytesPerParam: planner.TrainingBytesPerParam, OverheadBytes: planner.MemOverheadBytes}
	if cal.MemoryModel != nil && cal.MemoryModel.BytesPerParam > 0 {
		mm = cal.MemoryModel.Clone()
	}
	res.OverheadBefore, res.OverheadBytes = mm.OverheadBytes, mm.OverheadBytes
	var shared []float64
	own := map[gpu.Type][]float64{}
	for i, c := range cases {
		for s, meas := range c.PeakMemBytes {
			if !(meas > 0) {
				continue
			}
			r := meas - before[i].Stages[s].PeakMemBytes
			g, alike := stageType(&c.Plan.Stages[s])
			if _, has := mm.OverheadByGPU[g]; alike && has {
				own[g] = append(own[g], r)
			} else {
				shared = append(shared, r)
			}
		}
	}
	if len(shared) == 0 && len(own) == 0 {
		res.Notes = append(res.Notes, "no case measured peak memory: the memory model is unchanged")
		return
	}
	if len(shared) > 0 {
		mm.OverheadBytes = math.Max(0, mm.OverheadBytes+median(shared))
		res.OverheadBytes = mm.OverheadBytes
	}
	for _, g := range sortedTypes(own) {
		was := mm.OverheadByGPU[g]
		mm.OverheadByGPU[g] = math.Max(0, was+median(own[g]))
		if res.GPUOverheads == nil {
			res.GPUOverheads = map[gpu.Type][2]float64{}
		}
		res.GPUOverheads[g] = [2]float64{was, mm.OverheadByGPU[g]}
	}
	mm.Source = strings.TrimSpace(strings.TrimPrefix(mm.Source+"; calibrated on measured runs", "; "))
	cal.MemoryModel = mm
}

// stageType is the stage's GPU type when all its replicas have the same one.
func stageType(st *planner.Stage) (gpu.Type, bool) {
	var g gpu.Type
	for _, r := range st.Replicas {
		if g != "" && r.GPU != g {
			return "", false
		}
		g = r.GPU
	}
	return g, g != ""
}

func simulateAll(m *planner.ModelProfile, net *planner.Network, cases []Case) ([]planner.Estimate, error) {
	idx := make([]int, len(cases))
	for i := range idx {
		idx[i] = i
	}
	return simulateSome(m, net, cases, idx)
}

func simulateSome(m *planner.ModelProfile, net *planner.Network, cases []Case, idx []int) ([]planner.Estimate, error) {
	out := make([]planner.Estimate, len(idx))
	for k, i := range idx {
		est, err := planner.Simulate(cases[i].Plan, m, net)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", cases[i].Name, err)
		}
		out[k] = est
	}
	return out, nil
}

func errorsOf(cases []Case, est []planner.Estimate) Errors {
	var t, mem []float64
	for i, c := range cases {
		t = append(t, math.Abs(est[i].IterTime/c.IterSeconds-1))
		for s, meas := range c.PeakMemBytes {
			if meas > 0 {
				mem = append(mem, math.Abs(est[i].Stages[s].PeakMemBytes/meas-1))
			}
		}
	}
	return Errors{Time: median(t), Memory: median(mem)}
}

// onlyType is the plan's GPU type when every replica has the same one.
func onlyType(p *planner.Plan) (gpu.Type, bool) {
	var g gpu.Type
	for i := range p.Stages {
		sg, ok := stageType(&p.Stages[i])
		if !ok || (g != "" && sg != g) {
			return "", false
		}
		g = sg
	}
	return g, g != ""
}

// scale multiplies every measured time of c by f.
func scale(c *planner.Compute, f float64) {
	for _, byMBS := range c.Times {
		for _, layers := range byMBS {
			for i := range layers {
				layers[i].Fwd *= f
				layers[i].Bwd *= f
				layers[i].Update *= f
			}
		}
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func sortedTypes[V any](m map[gpu.Type]V) []gpu.Type {
	out := make([]gpu.Type, 0, len(m))
	for g := range m {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

// clone deep-copies what calibration changes (compute tables, memory model).
func clone(m *planner.ModelProfile) *planner.ModelProfile {
	c := *m
	c.Compute = make(map[gpu.Type]*planner.Compute, len(m.Compute))
	for g, comp := range m.Compute {
		if comp == nil {
			continue
		}
		cc := *comp
		cc.Times = make(map[int]map[int][]planner.LayerTime, len(comp.Times))
		for tp, byMBS := range comp.Times {
			cc.Times[tp] = make(map[int][]planner.LayerTime, len(byMBS))
			for mbs, layers := range byMBS {
				cc.Times[tp][mbs] = slices.Clone(layers)
			}
		}
		c.Compute[g] = &cc
	}
	c.MemoryModel = m.MemoryModel.Clone()
	return &c
}
