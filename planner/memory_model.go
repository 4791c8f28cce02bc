package planner

// MemoryModel is a memory calibration measured on the machine a profile was taken on. The
// defaults (TrainingBytesPerParam, MemOverheadBytes) describe Sailor's mixed-precision
// Megatron setup; a trainer that keeps fp32 weights and gradients with a fused Adam costs 16
// bytes per parameter, and what the framework holds besides the model's tensors (CUDA
// context, cuBLAS and NCCL workspaces, the caching allocator's slack) depends on the
// library versions and the GPU. Predictions of peak memory are only as good as these two
// numbers, so a profiler that can measure them should.
type MemoryModel struct {
	// BytesPerParam is what one parameter costs while training: weights, gradients and
	// optimizer state together. Zero means "not measured": the defaults apply.
	BytesPerParam float64 `json:"bytes_per_param"`
	// OverheadBytes is memory each GPU's training process holds whatever the model.
	OverheadBytes float64 `json:"overhead_bytes"`
}

// memCosts is the memory model a simulation uses: the profile's calibration when it has
// one, else the defaults. It is resolved once (NewSim) so the search's hot loop pays
// nothing for the choice.
type memCosts struct {
	perParam float64 // bytes per parameter float
	overhead float64 // bytes per GPU
}

// defaultMemCosts are the constants every profile without a calibration uses.
var defaultMemCosts = memCosts{perParam: TrainingBytesPerParam, overhead: MemOverheadBytes}

// memCostsOf is m's calibration, or the defaults when m has none (nil, or BytesPerParam not
// positive).
func memCostsOf(m *ModelProfile) memCosts {
	if m == nil || m.MemoryModel == nil || !(m.MemoryModel.BytesPerParam > 0) {
		return defaultMemCosts
	}
	return memCosts{perParam: m.MemoryModel.BytesPerParam, overhead: m.MemoryModel.OverheadBytes}
}
