package serve

// Assumptions are the cost model's constants. None was fitted to a measurement of a
// configuration the planner ranks; each says where it comes from, and the estimates are
// held against dejavu.md's H200 probe in cost_test.go.
type Assumptions struct {
	// ComputeEfficiency is the fraction of the dense BF16 (FP16) peak that the matmuls
	// reach. 0.5: large inference GEMMs in fused engines run at about half the datasheet
	// peak. An assumption; the H200 probe's prefill lands within 10% of it.
	ComputeEfficiency float64 `json:"compute_efficiency"`
	// BandwidthEfficiency is the fraction of datasheet HBM bandwidth that streaming weights
	// and KV reaches. 0.8, the planner's achievable fraction for links (Sailor measured 83%
	// of NVLink's nominal rate).
	BandwidthEfficiency float64 `json:"bandwidth_efficiency"`
	// MemoryUtilization is the fraction of device memory given to weights, activations and
	// KV. 0.9, vLLM's default gpu_memory_utilization: the rest is the CUDA context,
	// the allocator's slack and the kernels' workspaces.
	MemoryUtilization float64 `json:"memory_utilization"`
	// StreamOverhead is DéjàVu's m: how much streaming the prompt's KV to the token pool
	// lengthens a prefill. 1.02, the about 2% DéjàVu reports.
	StreamOverhead float64 `json:"stream_overhead"`
	// PrefillTokenBudget caps the tokens prefilled in one batch (at least one prompt): a
	// scheduler setting (vLLM's max_num_batched_tokens plays the same role), which bounds
	// the activation workspace and how long a prefill holds a colocated pool's decodes.
	PrefillTokenBudget int `json:"prefill_token_budget"`
	// MaxBatchPerStage caps the sequences of one microbatch: 256, vLLM's default
	// max_num_seqs. A pipeline of D stages holds D microbatches.
	MaxBatchPerStage int `json:"max_batch_per_stage"`
}

// DefaultAssumptions are the constants Search uses where Request.Assumptions leaves a field
// zero.
func DefaultAssumptions() Assumptions {
	return Assumptions{
		ComputeEfficiency:   0.5,
		BandwidthEfficiency: 0.8,
		MemoryUtilization:   0.9,
		StreamOverhead:      1.02,
		PrefillTokenBudget:  8192,
		MaxBatchPerStage:    256,
	}
}

// bytesPerValue is bf16 (fp16 on GPUs without bf16): weights, KV and activations.
const bytesPerValue = 2

func (a Assumptions) withDefaults() Assumptions {
	d := DefaultAssumptions()
	pos := func(v *float64, def float64) {
		if *v <= 0 {
			*v = def
		}
	}
	pos(&a.ComputeEfficiency, d.ComputeEfficiency)
	pos(&a.BandwidthEfficiency, d.BandwidthEfficiency)
	pos(&a.MemoryUtilization, d.MemoryUtilization)
	pos(&a.StreamOverhead, d.StreamOverhead)
	if a.PrefillTokenBudget <= 0 {
		a.PrefillTokenBudget = d.PrefillTokenBudget
	}
	if a.MaxBatchPerStage <= 0 {
		a.MaxBatchPerStage = d.MaxBatchPerStage
	}
	return a
}
