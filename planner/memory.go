package planner

import "github.com/schooner-ml/schooner/gpu"

// Memory model constants. Sailor's profiles count sizes in 4-byte floats; training keeps, per
// parameter, an fp32 master copy (4 bytes), its gradient (4), Adam's two moments (8), a
// communication buffer (4) and 4 more for framework extras: 24 bytes.
const (
	// BytesPerFloat converts the profiles' float counts to bytes.
	BytesPerFloat = 4
	// TrainingBytesPerParam is what one parameter costs on the GPU while training with Adam,
	// unless the profile carries a MemoryModel.
	TrainingBytesPerParam = 24
	// GradBytesPerParam is the size of one gradient as data parallelism all-reduces it.
	GradBytesPerParam = 4
	// MemOverheadBytes is memory a training process holds whatever the model: CUDA context,
	// cuBLAS/NCCL workspaces and allocator fragmentation (Sailor measured 2–3 GB), unless
	// the profile carries a MemoryModel.
	MemOverheadBytes = 2.5e9
)

// PeakMemory is the peak memory, in bytes, of each GPU (of type g) of a replica that holds
// layers first..last (inclusive) with TP-degree tp and micro-batch size mbs, as stage stageIndex of
// numStages with microbatches microbatches per iteration. It is the slow, allocation-free
// reference for Sim.StagePeakMemory; ok is false when the model has no memory profile for
// tp or the layer range is outside the model.
//
// Under 1F1B, stage i holds the activations of min(numStages-i, microbatches) microbatches
// at once: the first stage the most, the last only one. The profiles' floats are already
// per TP shard, so nothing here divides by tp. Parameters and overhead cost what m's
// MemoryModel says, or the defaults when it has none.
func PeakMemory(m *ModelProfile, g gpu.Type, tp, mbs, first, last, stageIndex, numStages, microbatches int) (bytes float64, ok bool) {
	layers, found := m.Mem[tp]
	if !found || first < 0 || last < first || last >= len(layers) {
		return 0, false
	}
	var params, act float64
	for _, l := range layers[first : last+1] {
		params += l.ParamsFloats
		act += l.ActMemFloats
	}
	return memCostsOf(m, g).stageMemory(params, act, mbs, stageIndex, numStages, microbatches), true
}

// inFlight is how many microbatches' activations stage stageIndex keeps under 1F1B.
func inFlight(stageIndex, numStages, microbatches int) int {
	n := numStages - stageIndex
	if microbatches > 0 && microbatches < n {
		n = microbatches
	}
	if n < 1 {
		n = 1
	}
	return n
}

// stageMemory is the peak bytes on one GPU of a stage holding paramsFloats parameters and
// actFloats activation floats per sample: the one formula PeakMemory, StagePeakMemory and
// Simulate share.
func (c memCosts) stageMemory(paramsFloats, actFloats float64, mbs, stageIndex, numStages, microbatches int) float64 {
	return paramsFloats*c.perParam +
		actFloats*float64(mbs)*BytesPerFloat*float64(inFlight(stageIndex, numStages, microbatches)) +
		c.overhead
}

// memPrefix holds running sums over one TP degree's layers so a stage's totals are two
// subtractions: params[k] is the sum over layers 0..k-1.
type memPrefix struct {
	params    []float64
	act       []float64
	actOutput []float64 // per layer, not summed: what a stage ending here sends on
}

func newMemPrefix(layers []LayerMem) *memPrefix {
	p := &memPrefix{
		params:    make([]float64, len(layers)+1),
		act:       make([]float64, len(layers)+1),
		actOutput: make([]float64, len(layers)),
	}
	for i, l := range layers {
		p.params[i+1] = p.params[i] + l.ParamsFloats
		p.act[i+1] = p.act[i] + l.ActMemFloats
		p.actOutput[i] = l.ActOutputFloats
	}
	return p
}

// memFor returns the prefix sums for tp, or nil.
func (s *Sim) memFor(tp int) *memPrefix {
	if tp <= 0 || tp >= len(s.mem) {
		return nil
	}
	return s.mem[tp]
}

// StagePeakMemory is PeakMemory from the precomputed sums: the peak bytes on each GPU of a
// replica of g at TP tp holding layers first..last as stage stageIndex of numStages, with
// microbatches microbatches per iteration. ok is false when the model has no memory profile
// for tp or the range is outside the model. The memory model does not depend on g today;
// it is a parameter so a per-GPU overhead can be added without touching callers.
func (s *Sim) StagePeakMemory(g gpu.Type, tp, mbs, first, last, stageIndex, numStages, microbatches int) (bytes float64, ok bool) {
	_ = g
	mp := s.memFor(tp)
	if mp == nil || first < 0 || last < first || last >= len(mp.actOutput) {
		return 0, false
	}
	params := mp.params[last+1] - mp.params[first]
	act := mp.act[last+1] - mp.act[first]
	return memCostsOf(s.model, g).stageMemory(params, act, mbs, stageIndex, numStages, microbatches), true
}
