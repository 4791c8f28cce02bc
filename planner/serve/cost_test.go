package serve

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

// probeModel is the random-weight Llama-style model of dejavu.md's H200 probe: 32 layers,
// hidden 4096, 8 KV heads, 5.9 B parameters (Llama 2 7B's MLP and vocabulary).
var probeModel = planner.Architecture{Name: "probe-5.9b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8,
	FFN: 11008, Vocab: 32000, SeqLen: 4096, GatedMLP: true, Rotary: true}

// llama70 is Llama 2 70B's shape.
var llama70 = planner.Architecture{Name: "llama-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8,
	FFN: 28672, Vocab: 32000, SeqLen: 4096, GatedMLP: true, Rotary: true}

func testLayout(t *testing.T, a planner.Architecture, g gpu.Type, tp, stages, per int) layout {
	t.Helper()
	spec, ok := planner.Spec(g)
	require.True(t, ok)
	l, ok := newLayout(a, spec, tp, stages, per, planner.DefaultNetwork(), DefaultAssumptions())
	require.True(t, ok)
	return l
}

// probeFactor is how far from dejavu.md's H200 measurements the estimates may be: the
// efficiencies are round assumptions, not fits, so agreement within 1.5× is the claim.
const probeFactor = 1.5

func TestModelSizeAndKVMatchTheH200Probe(t *testing.T) {
	t.Parallel()
	assert.InDelta(t, 5.9e9, WeightBytes(probeModel)/bytesPerValue, 0.1e9, "parameters")
	// 128 KiB per token per sequence, and 2.04 GiB for batch 8 at 2084 tokens
	assert.Equal(t, 128.0*1024, KVBytesPerToken(probeModel))
	assert.InDelta(t, 2.04, 8*2084*KVBytesPerToken(probeModel)/gib, 0.01)
	l := testLayout(t, probeModel, gpu.H200, 1, 1, 1)
	assert.Equal(t, KVBytesPerToken(probeModel), float64(l.blocks)*l.kvTokenLayer)
}

func TestPrefillIsNearTheH200Probe(t *testing.T) {
	t.Parallel()
	const measured = 0.415 // s: batch 8, prompt 2048
	l := testLayout(t, probeModel, gpu.H200, 1, 1, 1)
	got := l.prefill(8, 2048)
	t.Logf("prefill of 8 × 2048 on H200: estimated %.3f s, measured %.3f s (%.2f×)", got, measured, got/measured)
	assert.InEpsilon(t, measured, got, probeFactor-1)
	assert.Less(t, got, measured*probeFactor)
	assert.Greater(t, got, measured/probeFactor)
}

func TestDecodeStepIsNearTheH200WeightReadFloor(t *testing.T) {
	t.Parallel()
	const floor = 2.8e-3 // s: reading the weights once
	l := testLayout(t, probeModel, gpu.H200, 1, 1, 1)
	got := l.decodeIter(1, 16)
	t.Logf("decode step at batch 1 on H200: estimated %.2f ms, weight-read floor %.2f ms", got*1e3, floor*1e3)
	assert.GreaterOrEqual(t, got, floor/probeFactor)
	assert.Less(t, got, floor*probeFactor)
}

func TestPrefillGrowsAboutLinearlyWithThePrompt(t *testing.T) {
	t.Parallel()
	l := testLayout(t, probeModel, gpu.H100, 1, 1, 8)
	for _, p := range []int{512, 1024, 2048} {
		ratio := l.prefill(1, 2*p) / l.prefill(1, p)
		// linear in the matmuls, a little more from causal attention's p²
		assert.Greater(t, ratio, 1.9, "prompt %d→%d", p, 2*p)
		assert.Less(t, ratio, 2.3, "prompt %d→%d", p, 2*p)
	}
}

func TestDecodeIsBandwidthBoundSmallAndComputeBoundLarge(t *testing.T) {
	t.Parallel()
	l := testLayout(t, probeModel, gpu.H100, 1, 1, 8)
	const ctx = 128 // short context, so the KV read does not dominate
	// small batches share one read of the weights: eight sequences cost barely more than one
	assert.Less(t, l.decodeStage(8, ctx)/l.decodeStage(1, ctx), 1.1)
	// large batches pay for their FLOPs: doubling the batch about doubles the step
	assert.InDelta(t, 2.0, l.decodeStage(4096, ctx)/l.decodeStage(2048, ctx), 0.1)
	// and the time per token falls from the bandwidth floor towards the compute roofline
	perToken := func(b int) float64 { return l.decodeStage(b, ctx) / float64(b) }
	assert.Greater(t, perToken(1), 50*perToken(2048))
	computeFloor := 2 * l.blockParams * float64(l.blocks) / (l.peak * l.as.ComputeEfficiency)
	assert.InEpsilon(t, computeFloor, perToken(4096), 0.2)
}

func TestTensorParallelHelpsButCostsAllReduces(t *testing.T) {
	t.Parallel()
	l1, l2 := testLayout(t, probeModel, gpu.H100, 1, 1, 8), testLayout(t, probeModel, gpu.H100, 2, 1, 8)
	one, two := l1.decodeIter(8, 1024), l2.decodeIter(8, 1024)
	assert.Less(t, two, one)
	assert.Greater(t, two, one/2)
}

func TestPipelineDecodeTakesEveryStageAndStreamsActivations(t *testing.T) {
	t.Parallel()
	// one machine of 8 GPUs: D stages of the same model add hops but split the weights
	one := testLayout(t, probeModel, gpu.A100_80, 1, 1, 8)
	four := testLayout(t, probeModel, gpu.A100_80, 1, 4, 8)
	assert.Greater(t, four.decodeIter(4, 1024), one.decodeIter(1, 1024), "four microbatches of one round four stages")
	assert.Less(t, four.stageWeightBytes, one.stageWeightBytes/3)
	// across machines the hops take the network
	spread := testLayout(t, probeModel, gpu.A100_80, 1, 4, 1)
	assert.Equal(t, 3, spread.interHops)
	assert.Greater(t, spread.decodeIter(4, 1024), four.decodeIter(4, 1024))
	// a colocated prompt holds the whole pipeline: (D + j − 1) stage steps
	assert.InEpsilon(t, 4*four.prefillStage(1, 512), four.prefill(1, 512)-four.hops(512*4096*2), 1e-9)
	assert.InEpsilon(t, 7*four.prefillStage(1, 512), four.prefill(4, 512)-four.hops(512*4096*2), 1e-9)
}

// The repository's own inference worker on the H200 (BENCHMARKS.md, "Serving: failover of a
// stage on one H200", run 2: Llama-3-8B shape, random weights, bf16, all 32 layers on one
// GPU): re-prefill of prompt and 33 generated tokens with flash attention, and a decode step
// replaying CUDA graphs over a paged KV cache.
var workerH200 = []struct {
	ctx, batch      int
	prefill, decode float64 // seconds
}{
	{2048, 1, 0.134, 9.58e-3}, {2048, 8, 0.484, 24.5e-3}, {2048, 32, 1.992, 67.8e-3},
	{8192, 1, 0.320, 12.0e-3}, {8192, 8, 2.069, 63.4e-3}, {32768, 1, 1.461, 19.0e-3},
}

// Prefill of 8k tokens or more is within probeFactor of the worker; a single 2k prompt runs
// slower than the roofline (small matmuls, fixed costs the model leaves out). Decode steps
// are a roofline's lower bound: the worker's are 2–11× slower, bound by gathering K and V
// out of its pages (docs/serving.md), so the estimate must not exceed them.
func TestEstimatesAgainstTheWorkerOnTheH200(t *testing.T) {
	t.Parallel()
	a, ok := planner.BuiltinArchitecture("LLAMA-3-8")
	require.True(t, ok)
	l := testLayout(t, a, gpu.H200, 1, 1, 1)
	for _, m := range workerH200 {
		prefill := l.prefill(m.batch, m.ctx+33)
		decode := l.decodeIter(m.batch, float64(m.ctx))
		t.Logf("%5d × %2d: prefill %7.1f ms against %7.1f (%.2f×), decode %5.2f ms against %5.2f (%.2f×)",
			m.ctx, m.batch, prefill*1e3, m.prefill*1e3, m.prefill/prefill, decode*1e3, m.decode*1e3, m.decode/decode)
		if m.ctx*m.batch >= 8192 {
			assert.Less(t, prefill, m.prefill*probeFactor, "%d × %d", m.ctx, m.batch)
			assert.Greater(t, prefill, m.prefill/probeFactor, "%d × %d", m.ctx, m.batch)
		}
		assert.Less(t, prefill, m.prefill*probeFactor)
		assert.Less(t, decode, m.decode)
	}
}
