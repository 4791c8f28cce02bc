package serve

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/gpu"
)

func TestSeventyBDoesNotFitOne24GBGPU(t *testing.T) {
	t.Parallel()
	l := testLayout(t, llama70, gpu.L4, 1, 1, 1)
	assert.Greater(t, l.stageWeightBytes, l.spec.MemoryBytes, "138 GB of weights on a 24 GB card")
	assert.Less(t, l.kvRoom(0), 0.0)
	assert.Zero(t, l.maxSequences(1024, 0))
	_, ok := newPool(l, RoleBoth, 512, 256)
	assert.False(t, ok)
}

func TestDeeperPipelinesHoldBiggerBatches(t *testing.T) {
	t.Parallel()
	prev := 0
	for _, d := range []int{8, 10, 16, 20} {
		l := testLayout(t, llama70, gpu.L4, 1, d, 1)
		n := l.maxSequences(2048, 0)
		assert.Greater(t, n, prev, "D=%d", d)
		prev = n
	}
	// the batch is what KV room holds at the full context, capped per microbatch
	l := testLayout(t, probeModel, gpu.H200, 1, 1, 1)
	assert.Equal(t, DefaultAssumptions().MaxBatchPerStage, l.maxSequences(256, 0))
	fits := l.maxSequences(8192, 0)
	assert.Equal(t, int(l.kvRoom(0)/(8192*KVBytesPerToken(probeModel))), fits)
}

func TestPlannerPipelinesSeventyBOver24GBGPUs(t *testing.T) {
	t.Parallel()
	offers := []cloud.Offering{{Provider: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "g6.xlarge",
		GPUType: gpu.L4, GPUsPerInstance: 1, OnDemandPrice: 0.8048, SpotCapacity: -1}}
	res, err := Search(Request{Model: llama70, Rate: 0.2, PromptTokens: 512, OutputTokens: 128, Offerings: offers,
		AssumeInstances: 64, Targets: Targets{TTFT: 20e9, TPOT: 1e9}})
	require.NoError(t, err)
	best := res.Plans[0]
	for _, p := range best.Pools {
		assert.GreaterOrEqual(t, p.Stages*p.TP, 7, "%d × 24 GB cannot hold 138 GB", p.Stages*p.TP)
		assert.Equal(t, 1, p.TP, "one GPU per machine: no tensor parallelism")
		if p.Role != RolePrompt {
			assert.Positive(t, p.MaxBatch)
		}
	}
	t.Logf("70B on L4s: %s, %d GPUs, $%.2f/h, p99 TTFT %.2f s, TPOT %.0f ms", best.Mode, best.GPUs, best.USDPerHour,
		best.Simulated.TTFTP99, best.Simulated.TPOTP99*1e3)
}
