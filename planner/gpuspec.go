package planner

import "github.com/schooner-ml/schooner/gpu"

// GPUSpec is what the vendor publishes about a GPU: enough to decide what fits and to derive
// a compute profile where none was measured.
type GPUSpec struct {
	Type gpu.Type
	// MemoryBytes is the usable device memory.
	MemoryBytes float64
	// DenseTFLOPS are peak dense tensor-core throughputs (no sparsity); FP32 is the
	// non-tensor rate.
	BF16TFLOPS float64
	FP16TFLOPS float64
	FP32TFLOPS float64
	// MemBandwidthGBps is HBM/GDDR bandwidth.
	MemBandwidthGBps float64
	// NVLinkGBps is per-GPU NVLink bandwidth (one direction); 0 for PCIe-only boards.
	NVLinkGBps float64
}

const gib = 1 << 30

// gpuSpecs are datasheet figures (NVIDIA product pages and whitepapers: V100 SXM2, T4, A10G as
// deployed in AWS g5 (an A10 variant), L4, A100 SXM 40/80 GB, H100 SXM, H200 SXM, GH200).
// V100 has no BF16: its FP16 figure stands in, since mixed precision there runs in FP16.
var gpuSpecs = map[gpu.Type]GPUSpec{
	gpu.V100:    {Type: gpu.V100, MemoryBytes: 16 * gib, BF16TFLOPS: 125, FP16TFLOPS: 125, FP32TFLOPS: 15.7, MemBandwidthGBps: 900, NVLinkGBps: 150},
	gpu.V100_32: {Type: gpu.V100_32, MemoryBytes: 32 * gib, BF16TFLOPS: 125, FP16TFLOPS: 125, FP32TFLOPS: 15.7, MemBandwidthGBps: 900, NVLinkGBps: 150},
	gpu.T4:      {Type: gpu.T4, MemoryBytes: 16 * gib, BF16TFLOPS: 65, FP16TFLOPS: 65, FP32TFLOPS: 8.1, MemBandwidthGBps: 320},
	gpu.A10G:    {Type: gpu.A10G, MemoryBytes: 24 * gib, BF16TFLOPS: 70, FP16TFLOPS: 70, FP32TFLOPS: 31.2, MemBandwidthGBps: 600},
	gpu.L4:      {Type: gpu.L4, MemoryBytes: 24 * gib, BF16TFLOPS: 121, FP16TFLOPS: 121, FP32TFLOPS: 30.3, MemBandwidthGBps: 300},
	gpu.A100_40: {Type: gpu.A100_40, MemoryBytes: 40 * gib, BF16TFLOPS: 312, FP16TFLOPS: 312, FP32TFLOPS: 19.5, MemBandwidthGBps: 1555, NVLinkGBps: 300},
	gpu.A100_80: {Type: gpu.A100_80, MemoryBytes: 80 * gib, BF16TFLOPS: 312, FP16TFLOPS: 312, FP32TFLOPS: 19.5, MemBandwidthGBps: 2039, NVLinkGBps: 300},
	gpu.H100:    {Type: gpu.H100, MemoryBytes: 80 * gib, BF16TFLOPS: 989, FP16TFLOPS: 989, FP32TFLOPS: 67, MemBandwidthGBps: 3350, NVLinkGBps: 450},
	gpu.H200:    {Type: gpu.H200, MemoryBytes: 141 * 1e9, BF16TFLOPS: 989, FP16TFLOPS: 989, FP32TFLOPS: 67, MemBandwidthGBps: 4800, NVLinkGBps: 450},
	gpu.GH200:   {Type: gpu.GH200, MemoryBytes: 96 * gib, BF16TFLOPS: 989, FP16TFLOPS: 989, FP32TFLOPS: 67, MemBandwidthGBps: 4000, NVLinkGBps: 450},
}

// Spec returns the datasheet of t.
func Spec(t gpu.Type) (GPUSpec, bool) {
	s, ok := gpuSpecs[t]
	return s, ok
}
