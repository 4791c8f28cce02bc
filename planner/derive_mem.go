package planner

// Analytic per-layer memory of a decoder-only transformer, in Sailor's units: floats of 4
// bytes, per tensor-parallel shard, per sample at the model's sequence length. The layout is
// Sailor's: layer 0 the embedding, layers 1..L the blocks, then (optionally) a final-norm
// layer, and last the head. docs/profiles.md derives each formula and compares it with
// Sailor's llm_info.json.

// layerKind is what a profile layer holds.
type layerKind int

const (
	embeddingLayer layerKind = iota
	blockLayer
	finalNormLayer
	headLayer
)

// layerKinds is a's layout, one kind per profile layer.
func (a Architecture) layerKinds() []layerKind {
	kinds := make([]layerKind, 0, a.NumLayers())
	kinds = append(kinds, embeddingLayer)
	for i := 0; i < a.Layers; i++ {
		kinds = append(kinds, blockLayer)
	}
	if a.FinalNormLayer {
		kinds = append(kinds, finalNormLayer)
	}
	return append(kinds, headLayer)
}

// paddedVocab is the vocabulary Megatron-LM allocates at TP degree tp: rounded up to a
// multiple of 128·tp so every shard is a multiple of 128 rows. Sailor's profiles show it
// (OPT-350's embedding holds 50304 rows at TP 1, 50432 at TP 2).
func paddedVocab(vocab, tp int) int {
	m := 128 * tp
	return (vocab + m - 1) / m * m
}

// normParams is the weights of one norm: LayerNorm has a scale and a bias, RMSNorm a scale.
func (a Architecture) normParams() float64 {
	if a.GatedMLP {
		return float64(a.Hidden)
	}
	return 2 * float64(a.Hidden)
}

// qkvWidth is the output width of the fused query/key/value projection.
func (a Architecture) qkvWidth() float64 {
	headDim := float64(a.Hidden / a.Heads)
	return float64(a.Hidden) + 2*float64(a.kvHeads())*headDim
}

// mlpMatrices is the number of Hidden×FFN matrices in the MLP.
func (a Architecture) mlpMatrices() float64 {
	if a.GatedMLP {
		return 3
	}
	return 2
}

// blockMatmulParams is the weights a block multiplies activations with, unsharded: query,
// key, value, attention output, MLP. Biases and norms are left out (no FLOPs to speak of).
func (a Architecture) blockMatmulParams() float64 {
	h, f := float64(a.Hidden), float64(a.FFN)
	return h*a.qkvWidth() + h*h + a.mlpMatrices()*h*f
}

// blockParams is one block's parameters on one of tp shards. Megatron-LM splits the QKV and
// first MLP matrices by columns (with their biases) and the attention-output and last MLP
// matrices by rows; the row-parallel biases and the norms are replicated.
func (a Architecture) blockParams(tp int) float64 {
	h, f, t := float64(a.Hidden), float64(a.FFN), float64(tp)
	upBiases := f
	if a.GatedMLP {
		upBiases = 2 * f // gate and up projections
	}
	sharded := a.blockMatmulParams() + a.qkvWidth() + upBiases
	replicated := 2*h + 2*a.normParams()
	return sharded/t + replicated
}

// blockActMem is the activation floats one block keeps per sample for its backward pass, on
// one of tp shards.
//
//	s·h·R + s·(qkv + h + c·FFN)/tp + heads·s²/tp + 2s
//
// The replicated term R·s·h covers the block input, the residual and the norms' inputs
// (and 2s their per-token statistics);
// the sharded terms are the QKV output, the attention context and the MLP's inner
// activations (c = 1 for GELU, 4 for SwiGLU: gate, up, activation and product); the last
// is the attention probabilities. R = 3 and c = 1 reproduce Sailor's OPT numbers exactly
// (43·s·h at TP 1 for OPT-350); R = 8, c = 4 reproduce its Llama numbers.
func (a Architecture) blockActMem(tp int) float64 {
	s, h, f, t := float64(a.SeqLen), float64(a.Hidden), float64(a.FFN), float64(tp)
	replicated, inner := 3.0, 1.0
	if a.GatedMLP {
		replicated, inner = 8, 4
	}
	return s*h*replicated + s*(a.qkvWidth()+h+inner*f)/t + float64(a.Heads)*s*s/t + 2*s
}

// layerMem is the memory of one layer of kind k at TP degree tp.
func (a Architecture) layerMem(k layerKind, tp int) LayerMem {
	s, h, t := float64(a.SeqLen), float64(a.Hidden), float64(tp)
	vocabShard := float64(paddedVocab(a.Vocab, tp)) / t
	sh := s * h
	switch k {
	case embeddingLayer:
		params := vocabShard * h
		if !a.Rotary {
			params += s * h // learned positions, replicated
		}
		return LayerMem{
			ParamsFloats: params,
			// token ids, position ids and the s×s attention mask, as Sailor counts them
			ActInputFloats:  s*s + 2*s,
			ActOutputFloats: sh,
			ActMemFloats:    sh,
		}
	case blockLayer:
		return LayerMem{
			ParamsFloats:    a.blockParams(tp),
			ActInputFloats:  sh,
			ActOutputFloats: sh,
			ActMemFloats:    a.blockActMem(tp),
		}
	case finalNormLayer:
		return LayerMem{
			ParamsFloats:    a.normParams(),
			ActInputFloats:  sh,
			ActOutputFloats: sh,
			ActMemFloats:    3 * sh,
		}
	default: // head: final norm, output projection, loss
		params := a.normParams()
		if !a.TiedEmbeddings {
			params += vocabShard * h
		}
		return LayerMem{
			ParamsFloats:    params,
			ActInputFloats:  sh,
			ActOutputFloats: s * vocabShard, // this shard's logits
			// logits and their softmax for the loss, plus the norm's input
			ActMemFloats: 2*s*vocabShard + sh,
		}
	}
}

// TransformerMem is the analytic per-layer memory of a for each TP degree in tps that a can
// be split over (see Architecture.SupportsTP; others are left out): Mem[tp][layer] with
// layer 0 the embedding, 1..Layers the blocks, an optional final-norm layer, and the head
// last. It returns nil when a is not valid.
func TransformerMem(a Architecture, tps []int) map[int][]LayerMem {
	if a.Validate() != nil {
		return nil
	}
	kinds := a.layerKinds()
	mem := make(map[int][]LayerMem, len(tps))
	for _, tp := range tps {
		if !a.SupportsTP(tp) {
			continue
		}
		layers := make([]LayerMem, len(kinds))
		for i, k := range kinds {
			layers[i] = a.layerMem(k, tp)
		}
		mem[tp] = layers
	}
	return mem
}
