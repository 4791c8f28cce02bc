package planner_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

func deriveFor(t *testing.T, model string, g gpu.Type, tps, mbss []int) *planner.Compute {
	t.Helper()
	a, ok := planner.BuiltinArchitecture(model)
	require.True(t, ok)
	spec, ok := planner.Spec(g)
	require.True(t, ok)
	c := planner.DeriveCompute(a, spec, tps, mbss)
	require.NotNil(t, c)
	return c
}

func derivedBlockTime(c *planner.Compute, tp, mbs int) float64 {
	l := c.Times[tp][mbs][1]
	return l.Fwd + l.Bwd
}

func TestDeriveComputeShape(t *testing.T) {
	t.Parallel()
	c := deriveFor(t, "OPT-350", gpu.H100, nil, nil)
	assert.True(t, c.Derived)
	assert.Equal(t, gpu.H100, c.GPU)
	assert.Contains(t, c.Source, "989 TFLOPS")
	assert.ElementsMatch(t, planner.DefaultTPs(), intKeys(c.Times))
	for _, byMBS := range c.Times {
		assert.ElementsMatch(t, planner.DefaultMicroBatches(), intKeys(byMBS))
		for _, layers := range byMBS {
			require.Len(t, layers, 26)
			for i, l := range layers {
				assert.Positive(t, l.Fwd, i)
				assert.Positive(t, l.Bwd, i)
				assert.Positive(t, l.Update, i)
			}
		}
	}

	a, _ := planner.BuiltinArchitecture("OPT-350")
	assert.Nil(t, planner.DeriveCompute(a, planner.GPUSpec{Type: "empty"}, nil, nil), "no throughput, no estimate")
	assert.Nil(t, planner.DeriveCompute(planner.Architecture{}, planner.GPUSpec{}, nil, nil))
}

func TestDeriveComputeBehaves(t *testing.T) {
	t.Parallel()
	// Bigger microbatches take longer but use the GPU better.
	c := deriveFor(t, "GPT-Neo-2.7", gpu.A100_40, []int{1, 2, 4}, []int{1, 2, 8})
	assert.Greater(t, derivedBlockTime(c, 1, 8), derivedBlockTime(c, 1, 2))
	assert.Greater(t, derivedBlockTime(c, 1, 2), derivedBlockTime(c, 1, 1))
	assert.Less(t, derivedBlockTime(c, 1, 8)/8, derivedBlockTime(c, 1, 1))
	// Tensor parallelism speeds a big layer up, less than linearly.
	assert.Less(t, derivedBlockTime(c, 2, 8), derivedBlockTime(c, 1, 8))
	assert.Greater(t, derivedBlockTime(c, 2, 8), derivedBlockTime(c, 1, 8)/2)
	// Backward costs about twice the forward.
	l := c.Times[1][8][1]
	assert.InDelta(t, 2.5, l.Bwd/l.Fwd, 0.5)
	// The update depends on parameters only, and shrinks with TP.
	assert.Equal(t, c.Times[1][1][1].Update, c.Times[1][8][1].Update)
	assert.Less(t, c.Times[4][1][1].Update, c.Times[1][1][1].Update)

	// Newer GPUs are faster; GPUs without NVLink pay more for TP.
	h100 := deriveFor(t, "GPT-Neo-2.7", gpu.H100, []int{1}, []int{8})
	v100 := deriveFor(t, "GPT-Neo-2.7", gpu.V100, []int{1}, []int{8})
	assert.Less(t, derivedBlockTime(h100, 1, 8), derivedBlockTime(c, 1, 8))
	assert.Greater(t, derivedBlockTime(v100, 1, 8), derivedBlockTime(c, 1, 8))
	l4 := deriveFor(t, "GPT-Neo-2.7", gpu.L4, []int{1, 4}, []int{8})
	a10 := deriveFor(t, "GPT-Neo-2.7", gpu.A100_40, []int{1, 4}, []int{8})
	assert.Greater(t, derivedBlockTime(l4, 4, 8)/derivedBlockTime(l4, 1, 8), derivedBlockTime(a10, 4, 8)/derivedBlockTime(a10, 1, 8))
}

// The example Sailor's paper gives (OPT-350M, A100-40, mbs 1, TP 2, one block): 1.908 ms
// forward, 3.398 ms backward. The derived estimate lands within 10%.
func TestDeriveComputeNearSailorExample(t *testing.T) {
	t.Parallel()
	c := deriveFor(t, "OPT-350", gpu.A100_40, []int{2}, []int{1})
	l := c.Times[2][1][2]
	assert.InEpsilon(t, 1.908e-3+3.398e-3, l.Fwd+l.Bwd, 0.10)
}

func TestDeriveComputeFinalNormLayout(t *testing.T) {
	t.Parallel()
	a, _ := planner.BuiltinArchitecture("LLAMA-3-8")
	a.FinalNormLayer = true
	spec, _ := planner.Spec(gpu.GH200)
	c := planner.DeriveCompute(a, spec, []int{1}, []int{1})
	layers := c.Times[1][1]
	require.Len(t, layers, 35)
	norm, head := layers[33], layers[34]
	assert.Less(t, norm.Fwd, head.Fwd/10, "a norm is memory-bound and small")
	assert.Less(t, norm.Fwd, layers[1].Fwd/10)
}
