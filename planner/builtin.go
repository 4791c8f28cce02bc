package planner

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/schooner-ml/schooner/gpu"
)

// Architecture describes a decoder-only transformer well enough to count its parameters and
// activations and to estimate its FLOPs: everything TransformerMem and DeriveCompute need
// when no profile was measured.
//
// The zero values of the optional fields describe a GPT/OPT-style model: multi-head
// attention, a two-matrix GELU MLP, LayerNorm and a learned position table.
type Architecture struct {
	Name string `json:"name"`
	// Layers is the number of transformer blocks (embedding and head not included).
	Layers int `json:"layers"`
	Hidden int `json:"hidden"`
	// Heads is the number of attention (query) heads.
	Heads int `json:"heads"`
	// FFN is the MLP's inner width.
	FFN   int `json:"ffn"`
	Vocab int `json:"vocab"`
	// SeqLen is the training sequence length; profiles are per sample at this length.
	SeqLen int `json:"seq_len"`
	// TiedEmbeddings: the head reuses the embedding matrix, so it holds no weights of its
	// own (its logits matmul still costs FLOPs).
	TiedEmbeddings bool `json:"tied_embeddings"`

	// KVHeads is the number of key/value heads (grouped-query attention); 0 means Heads.
	KVHeads int `json:"kv_heads,omitempty"`
	// GatedMLP selects a Llama-style block: SwiGLU MLP (three FFN-wide matrices) and
	// RMSNorm (one weight vector per norm).
	GatedMLP bool `json:"gated_mlp,omitempty"`
	// Rotary: positions are rotary, so the embedding has no position table.
	Rotary bool `json:"rotary,omitempty"`
	// FinalNormLayer puts the final norm in a layer of its own between the last block and
	// the head, as Sailor's LLAMA-3-8 profile does; the model then has Layers+3 layers.
	FinalNormLayer bool `json:"final_norm_layer,omitempty"`
}

// Validate says what is wrong with a, if anything.
func (a Architecture) Validate() error {
	var errs []error
	positive := func(name string, v int) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %d", name, v))
		}
	}
	positive("layers", a.Layers)
	positive("hidden", a.Hidden)
	positive("heads", a.Heads)
	positive("ffn", a.FFN)
	positive("vocab", a.Vocab)
	positive("seq_len", a.SeqLen)
	if a.Heads > 0 && a.Hidden > 0 && a.Hidden%a.Heads != 0 {
		errs = append(errs, fmt.Errorf("hidden %d is not a multiple of heads %d", a.Hidden, a.Heads))
	}
	if a.KVHeads < 0 {
		errs = append(errs, fmt.Errorf("kv_heads must not be negative, got %d", a.KVHeads))
	} else if a.KVHeads > 0 && a.Heads > 0 && a.Heads%a.KVHeads != 0 {
		errs = append(errs, fmt.Errorf("heads %d is not a multiple of kv_heads %d", a.Heads, a.KVHeads))
	}
	if err := errors.Join(errs...); err != nil {
		if a.Name != "" {
			return fmt.Errorf("architecture %s: %w", a.Name, err)
		}
		return fmt.Errorf("architecture: %w", err)
	}
	return nil
}

// NumLayers is the number of profile layers a has: embedding, blocks, the optional final
// norm layer, and the head.
func (a Architecture) NumLayers() int {
	n := a.Layers + 2
	if a.FinalNormLayer {
		n++
	}
	return n
}

// kvHeads is the number of key/value heads.
func (a Architecture) kvHeads() int {
	if a.KVHeads > 0 {
		return a.KVHeads
	}
	return a.Heads
}

// SupportsTP reports whether a can be split over tp GPUs the way Megatron-LM splits it:
// whole attention and key/value heads and an even share of the MLP per GPU.
func (a Architecture) SupportsTP(tp int) bool {
	if tp <= 0 {
		return false
	}
	return a.Heads%tp == 0 && (a.kvHeads()%tp == 0 || tp%a.kvHeads() == 0) && a.FFN%tp == 0
}

// builtinArchitectures are the models Sailor profiled, with their published dimensions and
// the sequence lengths of Sailor's profiles (act_output_floats / hidden in llm_info.json:
// 2048 for the OPT and GPT-Neo models, 8192 for Llama-3-8B).
//
// OPT ties its output projection to the embedding in Hugging Face's checkpoints, but
// Sailor's profiles count the head's weights separately, as Megatron-LM does when the head
// sits on another pipeline stage and keeps its own copy; we count them the same way. OPT-350M's
// 512-wide embedding projection is ignored, as in Sailor's profiles.
var builtinArchitectures = []Architecture{
	{Name: "OPT-350", Layers: 24, Hidden: 1024, Heads: 16, FFN: 4096, Vocab: 50272, SeqLen: 2048},
	{Name: "GPT-Neo-2.7", Layers: 32, Hidden: 2560, Heads: 20, FFN: 10240, Vocab: 50257, SeqLen: 2048, TiedEmbeddings: true},
	{Name: "LLAMA-3-8", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, FFN: 14336, Vocab: 128256, SeqLen: 8192,
		GatedMLP: true, Rotary: true},
	{Name: "OPT-30", Layers: 48, Hidden: 7168, Heads: 56, FFN: 28672, Vocab: 50272, SeqLen: 2048},
}

// modelAliases maps the names people use for the built-in models to Sailor's directory
// names, which are the canonical ones.
var modelAliases = map[string]string{
	"opt-350m":     "OPT-350",
	"gpt-neo-2.7b": "GPT-Neo-2.7",
	"llama-3-8b":   "LLAMA-3-8",
	"opt-30b":      "OPT-30",
}

// ResolveModelName maps a built-in model's name or alias (case-insensitive) to its
// canonical name, the one BuiltinModels lists.
func ResolveModelName(name string) (string, bool) {
	key := strings.ToLower(strings.TrimSpace(name))
	if canon, ok := modelAliases[key]; ok {
		return canon, true
	}
	for _, a := range builtinArchitectures {
		if strings.ToLower(a.Name) == key {
			return a.Name, true
		}
	}
	return "", false
}

// BuiltinArchitecture returns the architecture of a built-in model, by canonical name or
// alias ("OPT-350" or "OPT-350M", "LLAMA-3-8" or "Llama-3-8B", ...).
func BuiltinArchitecture(name string) (Architecture, bool) {
	canon, ok := ResolveModelName(name)
	if !ok {
		return Architecture{}, false
	}
	for _, a := range builtinArchitectures {
		if a.Name == canon {
			return a, true
		}
	}
	return Architecture{}, false
}

// BuiltinModels lists the canonical names of the built-in models, sorted.
func BuiltinModels() []string {
	names := make([]string, 0, len(builtinArchitectures))
	for _, a := range builtinArchitectures {
		names = append(names, a.Name)
	}
	sort.Strings(names)
	return names
}

// DefaultTPs are the tensor-parallel degrees profiles are built for when the caller names
// none: Sailor's {1, 2, 4, 8}; TP stays inside one machine.
func DefaultTPs() []int { return []int{1, 2, 4, 8} }

// DefaultMicroBatches are the microbatch sizes profiles are built for when the caller names
// none.
func DefaultMicroBatches() []int { return []int{1, 2, 4, 8, 16} }

// profileGrid is the TP degrees and microbatch sizes to build a profile for: tps and mbss, or
// DefaultTPs and DefaultMicroBatches where they are nil.
func profileGrid(tps, mbss []int) ([]int, []int) {
	if tps == nil {
		tps = DefaultTPs()
	}
	if mbss == nil {
		mbss = DefaultMicroBatches()
	}
	return tps, mbss
}

// BuildModel is a profile computed from a alone: analytic memory (TransformerMem) and, for
// every GPU type in gpus that has a Spec, compute derived from its datasheet
// (DeriveCompute). nil tps or mbss mean DefaultTPs and DefaultMicroBatches. It returns nil
// when a is not valid.
func BuildModel(a Architecture, gpus []gpu.Type, tps, mbss []int) *ModelProfile {
	if a.Validate() != nil {
		return nil
	}
	tps, mbss = profileGrid(tps, mbss)
	m := &ModelProfile{
		Name:    a.Name,
		SeqLen:  a.SeqLen,
		Mem:     TransformerMem(a, tps),
		Compute: map[gpu.Type]*Compute{},
	}
	for _, g := range gpus {
		spec, ok := Spec(g)
		if !ok {
			continue
		}
		if c := DeriveCompute(a, spec, tps, mbss); c != nil {
			m.Compute[g] = c
		}
	}
	return m
}
