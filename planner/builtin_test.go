package planner_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

func TestBuiltinModelsAndAliases(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"GPT-Neo-2.7", "LLAMA-3-8", "OPT-30", "OPT-350"}, planner.BuiltinModels())
	for alias, canon := range map[string]string{
		"OPT-350M": "OPT-350", "OPT-350": "OPT-350", "opt-350m": "OPT-350",
		"GPT-Neo-2.7B": "GPT-Neo-2.7", "GPT-Neo-2.7": "GPT-Neo-2.7",
		"Llama-3-8B": "LLAMA-3-8", "LLAMA-3-8": "LLAMA-3-8", "llama-3-8": "LLAMA-3-8",
		"OPT-30B": "OPT-30", "OPT-30": "OPT-30",
	} {
		got, ok := planner.ResolveModelName(alias)
		require.True(t, ok, alias)
		assert.Equal(t, canon, got, alias)
		a, ok := planner.BuiltinArchitecture(alias)
		require.True(t, ok, alias)
		assert.Equal(t, canon, a.Name)
		require.NoError(t, a.Validate())
	}
	_, ok := planner.BuiltinArchitecture("GPT-5")
	assert.False(t, ok)
}

func TestBuiltinDimensions(t *testing.T) {
	t.Parallel()
	// Published sizes, and the sequence lengths of Sailor's profiles.
	for _, c := range []struct {
		name                                       string
		layers, hidden, heads, ffn, vocab, seq, kv int
	}{
		{"OPT-350", 24, 1024, 16, 4096, 50272, 2048, 0},
		{"GPT-Neo-2.7", 32, 2560, 20, 10240, 50257, 2048, 0},
		{"LLAMA-3-8", 32, 4096, 32, 14336, 128256, 8192, 8},
		{"OPT-30", 48, 7168, 56, 28672, 50272, 2048, 0},
	} {
		a, ok := planner.BuiltinArchitecture(c.name)
		require.True(t, ok)
		assert.Equal(t, []int{c.layers, c.hidden, c.heads, c.ffn, c.vocab, c.seq, c.kv},
			[]int{a.Layers, a.Hidden, a.Heads, a.FFN, a.Vocab, a.SeqLen, a.KVHeads}, c.name)
		assert.Equal(t, c.layers+2, a.NumLayers())
	}
}

func TestArchitectureValidate(t *testing.T) {
	t.Parallel()
	good, _ := planner.BuiltinArchitecture("OPT-350")
	require.NoError(t, good.Validate())

	bad := good
	bad.Hidden = 1000 // not a multiple of 16 heads
	bad.SeqLen = 0
	bad.KVHeads = 3
	err := bad.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "OPT-350")
	assert.Contains(t, err.Error(), "hidden 1000 is not a multiple of heads 16")
	assert.Contains(t, err.Error(), "seq_len must be positive")
	assert.Contains(t, err.Error(), "not a multiple of kv_heads 3")

	assert.Error(t, planner.Architecture{}.Validate())
}

func TestBuildModelCoversEveryGPUWithASpec(t *testing.T) {
	t.Parallel()
	a, _ := planner.BuiltinArchitecture("OPT-350M")
	m := planner.BuildModel(a, gpu.KnownTypes, nil, nil)
	require.NotNil(t, m)
	assert.Equal(t, "OPT-350", m.Name)
	assert.Equal(t, 2048, m.SeqLen)
	assert.Equal(t, 26, m.NumLayers())
	assert.ElementsMatch(t, []int{1, 2, 4, 8}, intKeys(m.Mem))
	for _, g := range gpu.KnownTypes {
		c := m.Compute[g]
		require.NotNil(t, c, g)
		assert.True(t, c.Derived, g)
		assert.Equal(t, g, c.GPU)
		assert.Contains(t, c.Source, "derived")
		for tp, byMBS := range c.Times {
			assert.ElementsMatch(t, []int{1, 2, 4, 8, 16}, intKeys(byMBS))
			for _, times := range byMBS {
				assert.Len(t, times, len(m.Mem[tp]))
			}
		}
	}

	// GPT-Neo's 20 heads do not split 8 ways.
	neo, _ := planner.BuiltinArchitecture("GPT-Neo-2.7")
	nm := planner.BuildModel(neo, []gpu.Type{gpu.A100_40, "TPU-v5"}, []int{1, 2, 4, 8}, []int{1})
	assert.ElementsMatch(t, []int{1, 2, 4}, intKeys(nm.Mem))
	assert.ElementsMatch(t, []int{1, 2, 4}, intKeys(nm.Compute[gpu.A100_40].Times))
	assert.Len(t, nm.Compute, 1, "a type without a Spec gets no compute")

	assert.Nil(t, planner.BuildModel(planner.Architecture{Name: "broken"}, gpu.KnownTypes, nil, nil))
}

func intKeys[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
