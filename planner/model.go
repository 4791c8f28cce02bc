package planner

import "github.com/schooner-ml/schooner/gpu"

// LayerMem is one layer's memory footprint for one tensor-parallel shard, per sample
// (microbatch size 1) at the model's sequence length, in floats (4 bytes each, as Sailor's
// profiles count them).
type LayerMem struct {
	ParamsFloats    float64 `json:"params_floats"`
	ActOutputFloats float64 `json:"act_output_floats"`
	ActInputFloats  float64 `json:"act_input_floats"`
	ActMemFloats    float64 `json:"act_mem_floats"`
}

// LayerTime is one layer's measured (or derived) time on one GPU, in seconds.
type LayerTime struct {
	Fwd    float64 `json:"fwd"`
	Bwd    float64 `json:"bwd"`
	Update float64 `json:"update"`
}

// Compute is the compute profile of a model on one GPU type: per TP degree, per microbatch
// size, per layer.
type Compute struct {
	GPU gpu.Type `json:"gpu"`
	// Derived is true when the times come from the GPU's specs rather than measurement;
	// plans using it say so.
	Derived bool   `json:"derived"`
	Source  string `json:"source"`
	// UpdatePerStage says the layers' Update is not each layer's share but the optimizer step
	// of a whole pipeline stage, repeated in every layer (Sailor's profiles: one value per TP
	// degree and micro-batch size, the same for every layer). A stage then takes its first
	// layer's value once, as Sailor's simulator does, instead of the sum over its layers,
	// which would count the step once per layer.
	UpdatePerStage bool `json:"update_per_stage,omitempty"`
	// Times[tp][mbs][layer].
	Times map[int]map[int][]LayerTime `json:"times"`
}

// ModelProfile is everything the simulator needs to know about a model. Layer 0 is the
// embedding and the last layer the head, as in Sailor's profiles.
type ModelProfile struct {
	Name   string `json:"name"`
	SeqLen int    `json:"seq_len"`
	// Mem[tp][layer].
	Mem map[int][]LayerMem `json:"mem"`
	// Compute per GPU type.
	Compute map[gpu.Type]*Compute `json:"compute"`
	// MemoryModel, when set, replaces the default cost of a parameter and the per-GPU
	// overhead in every prediction of peak memory: a profiler that measured them on its
	// machine knows better than the constants.
	MemoryModel *MemoryModel `json:"memory_model,omitempty"`
}

// NumLayers is the number of layers, embedding and head included.
func (m *ModelProfile) NumLayers() int {
	for _, layers := range m.Mem {
		return len(layers)
	}
	return 0
}
