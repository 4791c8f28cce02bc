package planner

import (
	"slices"
	"strconv"
	"strings"

	"github.com/schooner-ml/schooner/gpu"
)

// checkAgainstModel is Validate's half that needs the profile: layer coverage, and a compute
// and memory profile for every replica. Simulate makes the same checks as it goes.
func (s *Sim) checkAgainstModel(p *Plan) error {
	if s.model == nil || s.layers == 0 {
		return planErr(-1, -1, "no model profile to check against (or one without layers)")
	}
	if p.Stages[len(p.Stages)-1].LastLayer != s.layers-1 {
		return s.coverageError(p)
	}
	for i := range p.Stages {
		for j := range p.Stages[i].Replicas {
			r := &p.Stages[i].Replicas[j]
			if s.compute[computeKey{gpu: r.GPU, tp: r.TP, mbs: p.MicroBatch}] == nil || s.memFor(r.TP) == nil {
				return s.explainMissing(i, j, r, p.MicroBatch)
			}
		}
	}
	return nil
}

// coverageError explains why the last stage does not end at the model's last layer, given
// that checkShape found the stages contiguous from layer 0.
func (s *Sim) coverageError(p *Plan) error {
	i := len(p.Stages) - 1
	last := p.Stages[i].LastLayer
	if last >= s.layers {
		return planErr(i, -1, "last_layer %d is past the model's last layer %d (%s has %d layers, embedding and head included)",
			last, s.layers-1, s.model.Name, s.layers)
	}
	return planErr(i, -1, "last_layer %d leaves layers %d..%d unassigned (%s has %d layers, embedding and head included)",
		last, last+1, s.layers-1, s.model.Name, s.layers)
}

// explainMissing says which part of the profile a replica needs and the model lacks. It runs
// only on the error path, so it may look things up slowly.
func (s *Sim) explainMissing(i, j int, r *Replica, mbs int) error {
	m := s.model
	c := m.Compute[r.GPU]
	if c == nil {
		if _, ok := Spec(r.GPU); !ok {
			return planErr(i, j, "unknown GPU %q: %s has no compute profile for it and there is no datasheet (profiled: %s; known types: %v)",
				r.GPU, m.Name, profiledGPUs(m), gpu.KnownTypes)
		}
		return planErr(i, j, "%s has no compute profile for %s (profiled: %s)", m.Name, r.GPU, profiledGPUs(m))
	}
	byMBS, ok := c.Times[r.TP]
	if !ok {
		return planErr(i, j, "tp %d is not profiled for %s in %s (profiled: %s)", r.TP, r.GPU, m.Name, intKeys(c.Times))
	}
	layers, ok := byMBS[mbs]
	if !ok {
		return planErr(i, j, "micro_batch %d is not profiled for %s at tp %d in %s (profiled: %s)", mbs, r.GPU, r.TP, m.Name, intKeys(byMBS))
	}
	if len(layers) != s.layers {
		return planErr(i, j, "the %s profile of %s at tp %d, micro_batch %d has %d layers, the model %d", r.GPU, m.Name, r.TP, mbs, len(layers), s.layers)
	}
	mem, ok := m.Mem[r.TP]
	if !ok {
		return planErr(i, j, "%s has no memory profile for tp %d (profiled: %s)", m.Name, r.TP, intKeys(m.Mem))
	}
	return planErr(i, j, "the memory profile of %s at tp %d has %d layers, the model %d", m.Name, r.TP, len(mem), s.layers)
}

func profiledGPUs(m *ModelProfile) string {
	var names []string
	for g, c := range m.Compute {
		if c != nil {
			names = append(names, string(g))
		}
	}
	if len(names) == 0 {
		return "none"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func intKeys[V any](m map[int]V) string {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return "none"
	}
	slices.Sort(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strconv.Itoa(k)
	}
	return strings.Join(out, ", ")
}
