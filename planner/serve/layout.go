package serve

import (
	"math"

	"github.com/schooner-ml/schooner/planner"
)

// layout is one pipeline: Stages stages of TP GPUs each, of one GPU type, on machines of
// perInstance GPUs. It holds what the roofline (cost.go) and the memory fit (memory.go) need,
// derived once from the architecture, the datasheet and the links.
type layout struct {
	arch        planner.Architecture
	spec        planner.GPUSpec
	as          Assumptions
	tp, stages  int
	perInstance int
	// intra links the GPUs of one machine (TP, stage hops inside it); inter links machines
	// of one zone (stage hops between them).
	intra, inter planner.Link

	// blocks is the number of transformer blocks on the fullest stage.
	blocks int
	// blockParams is one block's parameters on one GPU; headParams the output projection's
	// (read by every step, stored on the last stage even when tied to the embedding).
	blockParams, headParams float64
	// stageWeightBytes is the fullest stage's weights on one GPU.
	stageWeightBytes float64
	// kvTokenLayer is one token's K and V for one layer on one GPU, bytes.
	kvTokenLayer float64
	// peak is FLOP/s and bw bytes/s, before the efficiencies.
	peak, bw float64
	// interHops is how many stage boundaries cross machines.
	interHops int
}

// newLayout derives a layout; false when the architecture cannot be split that way or the
// GPU's datasheet lacks throughput or bandwidth.
func newLayout(a planner.Architecture, spec planner.GPUSpec, tp, stages, perInstance int, net *planner.Network, as Assumptions) (layout, bool) {
	if tp < 1 || stages < 1 || stages > a.Layers || !a.SupportsTP(tp) || tp > perInstance || perInstance%tp != 0 {
		return layout{}, false
	}
	peak := firstPositive(spec.BF16TFLOPS, spec.FP16TFLOPS, spec.FP32TFLOPS) * 1e12
	if peak <= 0 || spec.MemBandwidthGBps <= 0 {
		return layout{}, false
	}
	mem := planner.TransformerMem(a, []int{tp})[tp]
	if len(mem) < 3 {
		return layout{}, false
	}
	l := layout{arch: a, spec: spec, as: as, tp: tp, stages: stages, perInstance: perInstance,
		peak: peak, bw: spec.MemBandwidthGBps * 1e9}
	end := planner.Endpoint{GPU: spec.Type, GPUsPerNode: perInstance}
	l.intra, l.inter = net.IntraNodeLink(end), net.Between(end, end)

	l.blocks = (a.Layers + stages - 1) / stages
	l.blockParams = mem[1].ParamsFloats
	l.headParams = float64(a.Vocab) * float64(a.Hidden) / float64(tp)
	embed, head := mem[0].ParamsFloats, mem[len(mem)-1].ParamsFloats
	if a.TiedEmbeddings && stages > 1 {
		head += l.headParams // the last stage keeps its own copy of the tied matrix
	}
	var params float64
	if stages == 1 {
		for _, m := range mem {
			params += m.ParamsFloats
		}
	} else {
		// The first stage holds the embedding, the last the head: the fullest is the one
		// with the larger of the two.
		params = float64(l.blocks)*l.blockParams + max(embed, head)
	}
	l.stageWeightBytes = params * bytesPerValue

	headDim := float64(a.Hidden / a.Heads)
	kvHeads := a.KVHeads
	if kvHeads == 0 {
		kvHeads = a.Heads
	}
	perGPU := math.Ceil(float64(kvHeads) / float64(tp)) // replicated when tp > kvHeads
	l.kvTokenLayer = 2 * perGPU * headDim * bytesPerValue

	if g := tp * stages; g > perInstance {
		l.interHops = (g+perInstance-1)/perInstance - 1
	}
	return l, true
}

// gpus is the GPUs one replica of the layout uses.
func (l *layout) gpus() int { return l.tp * l.stages }

// KVBytesPerToken is the KV cache one token of one sequence takes over the whole model: K and
// V for every layer and KV head, bf16.
func KVBytesPerToken(a planner.Architecture) float64 {
	kvHeads := a.KVHeads
	if kvHeads == 0 {
		kvHeads = a.Heads
	}
	return 2 * float64(a.Layers) * float64(kvHeads) * float64(a.Hidden/a.Heads) * bytesPerValue
}

// WeightBytes is the model's weights in bf16, as the training planner counts parameters.
func WeightBytes(a planner.Architecture) float64 {
	var params float64
	for _, m := range planner.TransformerMem(a, []int{1})[1] {
		params += m.ParamsFloats
	}
	return params * bytesPerValue
}

func firstPositive(vs ...float64) float64 {
	for _, v := range vs {
		if v > 0 {
			return v
		}
	}
	return 0
}
