package profiles

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

// checkModel says what makes m unusable by the simulator: no name or sequence length, no
// memory, layer counts that differ between TP degrees or between memory and compute,
// negative or non-finite numbers, unknown GPU types, compute for a TP degree without
// memory, a memory model that would not describe any GPU (no cost per parameter).
// Problems are reported in a stable order.
func checkModel(m *planner.ModelProfile) error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if m.Name == "" {
		add("model has no name")
	}
	if m.SeqLen <= 0 {
		add("seq_len must be positive, got %d", m.SeqLen)
	}
	if len(m.Mem) == 0 {
		add("mem is empty")
	}
	layers := -1
	for _, tp := range sortedKeys(m.Mem) {
		if tp <= 0 {
			add("mem: TP degree %d is not positive", tp)
		}
		mem := m.Mem[tp]
		if len(mem) == 0 {
			add("mem tp %d has no layers", tp)
			continue
		}
		if layers < 0 {
			layers = len(mem)
		} else if len(mem) != layers {
			add("mem tp %d has %d layers, other TP degrees have %d", tp, len(mem), layers)
		}
		for i, l := range mem {
			for _, v := range []struct {
				name string
				x    float64
			}{
				{"params_floats", l.ParamsFloats}, {"act_output_floats", l.ActOutputFloats},
				{"act_input_floats", l.ActInputFloats}, {"act_mem_floats", l.ActMemFloats},
			} {
				if bad(v.x) {
					add("mem tp %d layer %d: %s is %v", tp, i, v.name, v.x)
				}
			}
		}
	}
	if mm := m.MemoryModel; mm != nil {
		if !(mm.BytesPerParam > 0) || math.IsInf(mm.BytesPerParam, 0) {
			add("memory_model: bytes_per_param must be positive, got %v (leave memory_model out to use the defaults)", mm.BytesPerParam)
		}
		if bad(mm.OverheadBytes) {
			add("memory_model: overhead_bytes is %v", mm.OverheadBytes)
		}
		for _, g := range sortedKeys(mm.OverheadByGPU) {
			if !gpu.ValidName(g) {
				add("memory_model: overhead_by_gpu: %q is not a GPU type name", g)
			}
			if o := mm.OverheadByGPU[g]; bad(o) {
				add("memory_model: overhead_by_gpu %s is %v", g, o)
			}
		}
	}
	for _, g := range sortedKeys(m.Compute) {
		c := m.Compute[g]
		if !gpu.ValidName(g) {
			add("compute: %q is not a GPU type name (letters, digits, '-', '_', '.'; e.g. %v)", g, gpu.KnownTypes)
		}
		if c == nil {
			add("compute %s is null", g)
			continue
		}
		if c.GPU != "" && c.GPU != g {
			add("compute %s says gpu %q", g, c.GPU)
		}
		if len(c.Times) == 0 {
			add("compute %s has no times", g)
		}
		for _, tp := range sortedKeys(c.Times) {
			if _, ok := m.Mem[tp]; !ok {
				add("compute %s has tp %d, mem does not", g, tp)
			}
			for _, mbs := range sortedKeys(c.Times[tp]) {
				times := c.Times[tp][mbs]
				if mbs <= 0 {
					add("compute %s tp %d: microbatch size %d is not positive", g, tp, mbs)
				}
				if layers >= 0 && len(times) != layers {
					add("compute %s tp %d mbs %d has %d layers, mem has %d", g, tp, mbs, len(times), layers)
				}
				for i, t := range times {
					for _, v := range []struct {
						name string
						x    float64
					}{{"fwd", t.Fwd}, {"bwd", t.Bwd}, {"update", t.Update}} {
						if bad(v.x) {
							add("compute %s tp %d mbs %d layer %d: %s time is %v", g, tp, mbs, i, v.name, v.x)
						}
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// checkNetwork says what is wrong with n's links and prices.
func checkNetwork(n *planner.Network) error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	checkLinks := func(kind string, m map[gpu.Type]map[int]planner.Link) {
		for _, g := range sortedKeys(m) {
			if !gpu.ValidName(g) {
				add("%s: %q is not a GPU type name", kind, g)
			}
			for _, c := range sortedKeys(m[g]) {
				if c <= 0 {
					add("%s %s: GPUs per node %d is not positive", kind, g, c)
				}
				if err := checkLink(m[g][c]); err != nil {
					add("%s %s %d GPUs per node: %v", kind, g, c, err)
				}
			}
		}
	}
	checkLinks("intra_node", n.IntraNode)
	checkLinks("inter_node", n.InterNode)
	for _, a := range sortedKeys(n.Zones) {
		for _, b := range sortedKeys(n.Zones[a]) {
			if a == "" || b == "" {
				add("zones: empty zone name")
			}
			if err := checkLink(n.Zones[a][b]); err != nil {
				add("zones %s -> %s: %v", a, b, err)
			}
		}
	}
	if err := checkLink(n.InterZone); err != nil {
		add("inter_zone: %v", err)
	}
	if err := checkLink(n.InterRegion); err != nil {
		add("inter_region: %v", err)
	}
	for _, a := range sortedKeys(n.Egress) {
		for _, b := range sortedKeys(n.Egress[a]) {
			if bad(n.Egress[a][b]) {
				add("egress %s -> %s is %v", a, b, n.Egress[a][b])
			}
		}
	}
	for _, v := range []struct {
		name string
		x    float64
	}{
		{"egress_inter_zone", n.EgressInterZone}, {"egress_inter_region", n.EgressInterRegion},
		{"egress_inter_continent", n.EgressInterContinent},
	} {
		if bad(v.x) {
			add("%s is %v", v.name, v.x)
		}
	}
	return errors.Join(errs...)
}

func checkLink(l planner.Link) error {
	for _, c := range l.Coeffs {
		if math.IsNaN(c) || math.IsInf(c, 0) {
			return fmt.Errorf("coefficient %v", c)
		}
	}
	if bad(l.PeakBps) {
		return fmt.Errorf("peak_bps is %v", l.PeakBps)
	}
	if bad(l.LatencyS) {
		return fmt.Errorf("latency_s is %v", l.LatencyS)
	}
	return nil
}

// bad is true for negative and non-finite numbers.
func bad(x float64) bool { return x < 0 || math.IsNaN(x) || math.IsInf(x, 0) }

// sortedKeys lists m's keys in ascending order, so that checks and conversions walk maps
// in a stable order and report problems deterministically.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
