package planner

import (
	"maps"

	"github.com/schooner-ml/schooner/gpu"
)

// MemoryModel is a memory calibration measured on the machine a profile was taken on. The
// defaults (TrainingBytesPerParam, MemOverheadBytes) describe Sailor's mixed-precision
// Megatron setup; a trainer that keeps fp32 weights and gradients with a fused Adam costs 16
// bytes per parameter, and what the framework holds besides the model's tensors (CUDA
// context, cuBLAS and NCCL workspaces, fused kernels, the caching allocator's slack) depends
// on the library versions and the GPU. Predictions of peak memory are only as good as these
// numbers, so a profiler that can measure them should.
type MemoryModel struct {
	// BytesPerParam is what one parameter costs while training: weights, gradients and
	// optimizer state together. Zero means "not measured": the defaults apply.
	BytesPerParam float64 `json:"bytes_per_param"`
	// OverheadBytes is memory each GPU's training process holds whatever the model.
	OverheadBytes float64 `json:"overhead_bytes"`
	// OverheadByGPU replaces OverheadBytes on the GPU types it names: the framework's
	// footprint is a property of the GPU and its software as much as of the trainer (Sailor
	// measured 5.06 GB on its GH200 nodes, where its planner assumes 2–3 GB elsewhere).
	OverheadByGPU map[gpu.Type]float64 `json:"overhead_by_gpu,omitempty"`
	// Source says where the numbers come from (a measurement, a calibration, a paper).
	Source string `json:"source,omitempty"`
}

// Clone is a deep copy of mm (nil for nil).
func (mm *MemoryModel) Clone() *MemoryModel {
	if mm == nil {
		return nil
	}
	c := *mm
	c.OverheadByGPU = maps.Clone(mm.OverheadByGPU)
	return &c
}

// Overhead is the framework memory per GPU of type g under mm.
func (mm *MemoryModel) Overhead(g gpu.Type) float64 {
	if o, ok := mm.OverheadByGPU[g]; ok {
		return o
	}
	return mm.OverheadBytes
}

// memCosts is the memory model a simulation uses for one GPU type: the profile's calibration
// when it has one, else the defaults. It is resolved once per GPU type (NewSim) so the
// search's hot loop pays nothing for the choice.
type memCosts struct {
	perParam float64 // bytes per parameter float
	overhead float64 // bytes per GPU
}

// defaultMemCosts are the constants every profile without a calibration uses.
var defaultMemCosts = memCosts{perParam: TrainingBytesPerParam, overhead: MemOverheadBytes}

// memCostsOf is m's calibration for GPU type g, or the defaults when m has none (nil, or
// BytesPerParam not positive).
func memCostsOf(m *ModelProfile, g gpu.Type) memCosts {
	if m == nil || m.MemoryModel == nil || !(m.MemoryModel.BytesPerParam > 0) {
		return defaultMemCosts
	}
	return memCosts{perParam: m.MemoryModel.BytesPerParam, overhead: m.MemoryModel.Overhead(g)}
}
