package planner

import (
	"fmt"

	"github.com/schooner-ml/schooner/gpu"
)

// Derived compute: per-layer times from FLOPs, memory traffic and the GPU's datasheet, for
// GPU types nobody profiled. The model is a small roofline with a fixed cost per layer:
//
//	fwd = F/(peak·mfu) + γ·A/bandwidth + overhead·(1 + k·(tp−1)) + TP all-reduces
//	bwd = 2F/(peak·mfu·bwdEff) + 2γ·A/bandwidth + overhead·(1 + k·(tp−1))·bwdOverhead + TP all-reduces
//
// F is the layer's matmul FLOPs per GPU (2·params·tokens plus 4·s²·h for attention, split
// over tp), A the attention-score elements per GPU (heads·s²·mbs/tp), which an attention
// without kernel fusion reads and writes several times, as the stack Sailor profiled does.
// The fixed overhead makes small microbatches inefficient (the effective model-FLOPs
// utilisation F/(peak·fwd) rises with the microbatch size), and its growth with tp together
// with the all-reduces is the loss from tensor parallelism. The constants were fitted (least
// squares on log time) to Sailor's measured A100-40, V100-16 and GH-96 profiles;
// docs/profiles.md lists them with the errors that remain.

// computeClass holds the constants of one GPU generation.
type computeClass struct {
	name string
	// mfu is the fraction of the dense BF16/FP16 peak the matmuls reach.
	mfu float64
	// overheadS is the fixed cost of one layer pass at TP 1, seconds.
	overheadS float64
}

var (
	voltaClass  = computeClass{name: "volta", mfu: 0.133, overheadS: 90e-6}
	ampereClass = computeClass{name: "ampere", mfu: 0.506, overheadS: 171e-6}
	hopperClass = computeClass{name: "hopper", mfu: 0.275, overheadS: 186e-6}
)

// gpuClasses assigns each GPU type the generation whose constants it uses. Only V100-16,
// A100-40 and GH200-96 were fitted; T4 (Turing) borrows Volta's, A10G and L4 (Ampere, Ada)
// Ampere's, H100 and H200 the GH200's.
var gpuClasses = map[gpu.Type]computeClass{
	gpu.V100: voltaClass, gpu.V100_32: voltaClass, gpu.T4: voltaClass,
	gpu.A10G: ampereClass, gpu.L4: ampereClass, gpu.A100_40: ampereClass, gpu.A100_80: ampereClass,
	gpu.H100: hopperClass, gpu.H200: hopperClass, gpu.GH200: hopperClass,
}

// Fitted constants shared by every GPU generation.
const (
	// tpOverheadGrowth: each extra TP rank adds this much of the fixed overhead again
	// (synchronisation and launch of the sharded kernels).
	tpOverheadGrowth = 1.64
	// bwdEfficiency is the backward matmuls' efficiency relative to the forward ones.
	bwdEfficiency = 0.738
	// bwdOverhead scales the fixed overhead for the backward pass.
	bwdOverhead = 0.982
	// attnBytesPerScore is the memory traffic per attention-score element in the forward
	// pass (masking, softmax, dropout, each reading and writing the scores).
	attnBytesPerScore = 48.0
	// tpAllReduceSlowdown: the TP all-reduces of a microbatch's activations take this many
	// times the ideal ring time over NVLink (small messages, launch latency).
	tpAllReduceSlowdown = 2.09
	// embBytesPerValue is the embedding forward's memory traffic per output value, and
	// embOverhead its share of the fixed overhead.
	embBytesPerValue = 153.0
	embOverhead      = 0.633
	// embBwdBytesPerValue: the embedding's backward is a scatter-add of its output gradient.
	embBwdBytesPerValue = 8.0
	// headBytesPerLogit is the loss's memory traffic per logit in the forward pass and
	// headBwdTraffic the backward's relative to it; headOverhead is the head's share of the
	// fixed overhead.
	headBytesPerLogit = 41.8
	headBwdTraffic    = 0.123
	headOverhead      = 0.761
	// normFwdBytesPerValue and normBwdBytesPerValue are a stand-alone norm layer's traffic.
	normFwdBytesPerValue = 44.0
	normBwdBytesPerValue = 128.0
	// updateBytesPerParam is the optimizer step's memory traffic per parameter (mixed
	// precision Adam as PyTorch runs it, several passes over master weights, gradients and
	// moments) and updateOverheadS its fixed cost per layer.
	updateBytesPerParam = 134.0
	updateOverheadS     = 0.53e-3
	// activationBytes is the size of the activations the TP all-reduces move (BF16).
	activationBytes = 2.0
	// pcieGBps stands in for NVLink on PCIe-only boards (PCIe 4.0 x16, achievable).
	pcieGBps = 25.0
)

// deriver holds what every layer's estimate needs for one GPU.
type deriver struct {
	a      Architecture
	class  computeClass
	peak   float64 // FLOP/s
	bw     float64 // memory bytes/s
	tpLink float64 // bytes/s between the GPUs of one TP group
}

func newDeriver(a Architecture, spec GPUSpec) (deriver, error) {
	peak := spec.BF16TFLOPS
	if peak <= 0 {
		peak = spec.FP16TFLOPS
	}
	if peak <= 0 {
		peak = spec.FP32TFLOPS
	}
	if peak <= 0 || spec.MemBandwidthGBps <= 0 {
		return deriver{}, fmt.Errorf("GPU %s: spec lacks TFLOPS or memory bandwidth", spec.Type)
	}
	class, ok := gpuClasses[spec.Type]
	if !ok {
		class = ampereClass
	}
	link := spec.NVLinkGBps
	if link <= 0 {
		link = pcieGBps
	}
	return deriver{a: a, class: class, peak: peak * 1e12, bw: spec.MemBandwidthGBps * 1e9, tpLink: link * 1e9}, nil
}

// overhead is the fixed cost of one pass at TP tp.
func (d deriver) overhead(tp int) float64 {
	return d.class.overheadS * (1 + tpOverheadGrowth*float64(tp-1))
}

// allReduces is the time of n ring all-reduces of the microbatch's activations (b·s·h
// values) over tp GPUs.
func (d deriver) allReduces(n, tp, mbs int) float64 {
	if tp <= 1 {
		return 0
	}
	bytes := float64(mbs) * float64(d.a.SeqLen) * float64(d.a.Hidden) * activationBytes
	ring := 2 * float64(tp-1) / float64(tp) * bytes / d.tpLink
	return float64(n) * tpAllReduceSlowdown * ring
}

// layer estimates one layer of kind k.
func (d deriver) layer(k layerKind, mem LayerMem, tp, mbs int) LayerTime {
	a := d.a
	b, t := float64(mbs), float64(tp)
	s, h := float64(a.SeqLen), float64(a.Hidden)
	speed := d.peak * d.class.mfu
	ov := d.overhead(tp)
	update := updateOverheadS + updateBytesPerParam*mem.ParamsFloats/d.bw
	switch k {
	case embeddingLayer:
		values := b * s * h
		return LayerTime{
			Fwd:    ov*embOverhead + d.allReduces(1, tp, mbs) + embBytesPerValue*values/d.bw,
			Bwd:    embBwdBytesPerValue * values / d.bw,
			Update: update,
		}
	case blockLayer:
		flops := b * (2*s*a.blockMatmulParams() + 4*s*s*h) / t
		scores := b * float64(a.Heads) * s * s / t
		comm := d.allReduces(2, tp, mbs)
		return LayerTime{
			Fwd:    flops/speed + attnBytesPerScore*scores/d.bw + ov + comm,
			Bwd:    2*flops/(speed*bwdEfficiency) + 2*attnBytesPerScore*scores/d.bw + ov*bwdOverhead + comm,
			Update: update,
		}
	case finalNormLayer:
		values := b * s * h
		return LayerTime{
			Fwd:    normFwdBytesPerValue * values / d.bw,
			Bwd:    normBwdBytesPerValue * values / d.bw,
			Update: update,
		}
	default: // head
		vocabShard := float64(paddedVocab(a.Vocab, tp)) / t
		flops := 2 * b * s * h * vocabShard
		logits := b * s * vocabShard
		return LayerTime{
			Fwd:    flops/speed + headBytesPerLogit*logits/d.bw + ov*headOverhead,
			Bwd:    2*flops/(speed*bwdEfficiency) + headBwdTraffic*headBytesPerLogit*logits/d.bw + ov*bwdOverhead*headOverhead,
			Update: update,
		}
	}
}

// DeriveCompute estimates a's per-layer forward, backward and optimizer-step times on the
// GPU spec describes, for each TP degree in tps that a supports and each microbatch size in
// mbss (nil: DefaultTPs, DefaultMicroBatches). The result has Derived set and a Source that
// names the inputs. It returns nil when a is not valid or spec lacks throughput or
// bandwidth. See the comment at the top of this file for the model.
func DeriveCompute(a Architecture, spec GPUSpec, tps, mbss []int) *Compute {
	if a.Validate() != nil {
		return nil
	}
	d, err := newDeriver(a, spec)
	if err != nil {
		return nil
	}
	tps, mbss = profileGrid(tps, mbss)
	kinds := a.layerKinds()
	c := &Compute{
		GPU:     spec.Type,
		Derived: true,
		Source: fmt.Sprintf("derived: %s from datasheet (%.0f TFLOPS, %.0f GB/s, %s-class efficiency)",
			a.Name, d.peak/1e12, d.bw/1e9, d.class.name),
		Times: map[int]map[int][]LayerTime{},
	}
	// Compute times depend on each layer's memory, so they are derived per TP degree that
	// TransformerMem keeps (the ones a can be split over).
	for tp, mems := range TransformerMem(a, tps) {
		byMBS := map[int][]LayerTime{}
		for _, mbs := range mbss {
			if mbs <= 0 {
				continue
			}
			times := make([]LayerTime, len(kinds))
			for i, k := range kinds {
				times[i] = d.layer(k, mems[i], tp, mbs)
			}
			byMBS[mbs] = times
		}
		c.Times[tp] = byMBS
	}
	return c
}
