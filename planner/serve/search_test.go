package serve

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/catalog"
	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

// a100s are single A100-80 machines in two zones, plenty of them.
var a100s = []cloud.Offering{
	{Provider: "gcp", Region: "us-central1", Zone: "us-central1-a", InstanceType: "a2-ultragpu-1g", GPUType: gpu.A100_80,
		GPUsPerInstance: 1, OnDemandPrice: 5.07, SpotPrice: 2.0, SpotCapacity: 3},
	{Provider: "gcp", Region: "us-central1", Zone: "us-central1-b", InstanceType: "a2-ultragpu-1g", GPUType: gpu.A100_80,
		GPUsPerInstance: 1, OnDemandPrice: 5.07, SpotPrice: 2.1, SpotCapacity: 3},
}

func llama8(t *testing.T) planner.Architecture {
	a, ok := planner.BuiltinArchitecture("LLAMA-3-8")
	require.True(t, ok)
	return a
}

// checkPlans asserts what every result promises: plans within the cap, meeting the targets
// in simulation, cheapest first.
func checkPlans(t *testing.T, req Request, res *Result) {
	t.Helper()
	require.NotEmpty(t, res.Plans)
	for i, p := range res.Plans {
		assert.LessOrEqual(t, p.GPUs, req.withDefaults().MaxGPUs)
		assert.LessOrEqual(t, p.Simulated.TTFTP99, res.Targets.TTFT.Seconds())
		assert.LessOrEqual(t, p.Simulated.TPOTP99, res.Targets.TPOT.Seconds())
		assert.Less(t, p.Utilization, 1.0)
		if i > 0 {
			assert.GreaterOrEqual(t, p.USDPerHour, res.Plans[i-1].USDPerHour)
		}
	}
}

// Long prompts and short outputs: prompt work dominates, DéjàVu's formula gives the token
// pool a small share, and prefills stalling a colocated pool's decodes make it pay for
// spare replicas; the planner disaggregates. Short prompts and long outputs: the formula
// gives the prompt side less than a replica's worth, and the planner colocates.
func TestDisaggregatesLongPromptsColocatesLongOutputs(t *testing.T) {
	t.Parallel()
	a := llama8(t)
	long := Request{Model: a, Rate: 4, PromptTokens: 8192, OutputTokens: 32, Offerings: a100s, AssumeInstances: 16,
		Targets: Targets{TPOT: 40 * time.Millisecond}}
	short := Request{Model: a, Rate: 4, PromptTokens: 128, OutputTokens: 1024, Offerings: a100s, AssumeInstances: 16,
		Targets: Targets{TPOT: 40 * time.Millisecond}}

	// the formula's view, on one A100 per pool replica
	l := testLayout(t, a, gpu.A100_80, 1, 1, 1)
	share := func(r Request) float64 {
		pr, ok := newPool(l, RolePrompt, r.PromptTokens, r.OutputTokens)
		require.True(t, ok)
		tk, ok := newPool(l, RoleToken, r.PromptTokens, r.OutputTokens)
		require.True(t, ok)
		n, tt, y, m := dejavuTerms(&pr, &tk, r.Targets.TPOT.Seconds())
		return TokenPoolSize(1, n, tt, y, m)
	}
	assert.Less(t, share(long), 0.5, "long prompts: most GPUs prefill")
	assert.Greater(t, share(short), 0.85, "long outputs: nearly all GPUs decode")

	res, err := Search(long)
	require.NoError(t, err)
	checkPlans(t, long, res)
	best := res.Plans[0]
	assert.Equal(t, Disaggregated, best.Mode)
	assert.Greater(t, best.Pools[0].GPUs, best.Pools[1].GPUs, "the prompt pool is the larger")
	assert.InDelta(t, float64(best.Pools[1].GPUs), best.DejaVuTokenGPUs, 1.5, "the token pool is about DéjàVu's D_t")

	res, err = Search(short)
	require.NoError(t, err)
	checkPlans(t, short, res)
	best = res.Plans[0]
	assert.Equal(t, Colocated, best.Mode)
	assert.Less(t, float64(best.GPUs)*(1-share(short)), 1.0, "the formula leaves prompts less than one GPU")
}

func TestSpotOnlyWhenAllowedAndOnDemandWhenShort(t *testing.T) {
	t.Parallel()
	req := Request{Model: llama8(t), Rate: 20, PromptTokens: 512, OutputTokens: 256, Offerings: a100s, AssumeInstances: 16}
	res, err := Search(req)
	require.NoError(t, err)
	checkPlans(t, req, res)
	for _, p := range res.Plans {
		assert.False(t, p.Spot)
		for _, pool := range p.Pools {
			assert.Equal(t, "on-demand", pool.Capacity)
		}
	}
	onDemand := res.Plans[0]

	req.AllowSpot = true
	res, err = Search(req)
	require.NoError(t, err)
	checkPlans(t, req, res)
	best := res.Plans[0]
	assert.True(t, best.Spot)
	assert.Less(t, best.USDPerHour, onDemand.USDPerHour)
	// six spot machines in all, the cheaper zone first; more comes on demand
	var spot, od int
	for _, pool := range best.Pools {
		for _, pl := range pool.Placements {
			if pl.Capacity == cloud.Spot {
				spot += pl.Instances
			} else {
				od += pl.Instances
			}
		}
	}
	assert.LessOrEqual(t, spot, 6)
	if best.Instances > 6 {
		assert.Equal(t, best.Instances-6, od)
	}
	assert.Equal(t, "us-central1-a", best.Pools[0].Placements[0].Zone)
}

func TestErrorsSayWhatIsOutOfReach(t *testing.T) {
	t.Parallel()
	l4 := []cloud.Offering{{Provider: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "g6.xlarge",
		GPUType: gpu.L4, GPUsPerInstance: 1, OnDemandPrice: 0.8, SpotCapacity: -1}}
	base := Request{Model: llama70, Rate: 1, PromptTokens: 512, OutputTokens: 128, Offerings: l4, AssumeInstances: 64}

	// 138 GB of weights over at most four 24 GB GPUs
	req := base
	req.MaxGPUs = 4
	_, err := Search(req)
	var nf *NoFitError
	require.ErrorAs(t, err, &nf)
	assert.Contains(t, err.Error(), "no offering fits llama-70b")

	// a decode step that reads 138 GB at the L4's 300 GB/s cannot take 100 ms
	_, err = Search(base)
	var ue *UnreachableError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, TargetTPOT, ue.Target)
	assert.Greater(t, ue.Best, 138e9/300e9)
	assert.Contains(t, err.Error(), "the tpot target 100ms is out of reach")

	req = Request{Model: llama8(t), Rate: 1, PromptTokens: 4096, OutputTokens: 16, Offerings: a100s,
		Targets: Targets{TTFT: time.Millisecond}}
	_, err = Search(req)
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, TargetTTFT, ue.Target)

	req = Request{Model: llama8(t), Rate: 1e5, PromptTokens: 512, OutputTokens: 256, Offerings: a100s, AssumeInstances: 64}
	_, err = Search(req)
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, TargetRate, ue.Target)
	assert.Less(t, ue.Best, 1e5)
	assert.Positive(t, ue.Best)

	_, err = Search(Request{Model: llama8(t), Rate: -1, PromptTokens: 0, OutputTokens: 1, Offerings: a100s})
	assert.ErrorContains(t, err, "rate must be positive")
	assert.ErrorContains(t, err, "prompt tokens must be positive")
}

// When the queueing model passed candidates that the simulation then failed, the error
// gives the simulation's best p99s.
func TestSimulatedMissesAreExplained(t *testing.T) {
	t.Parallel()
	c := checker{ttft: 1, tpot: 0.05, bestTTFT: 1.5, bestTPOT: 0.04, req: Request{MaxGPUs: 8}}
	var ue *UnreachableError
	require.ErrorAs(t, c.explain(), &ue)
	assert.Equal(t, TargetTTFT, ue.Target)
	assert.True(t, ue.Simulated)
	assert.Contains(t, ue.Error(), "the best achievable is 1.5s (p99 in simulation")

	c.bestTTFT = 0.9
	require.ErrorAs(t, c.explain(), &ue)
	assert.Equal(t, TargetBoth, ue.Target)
	assert.Contains(t, ue.Error(), "no configuration met the TTFT target 1s and the TPOT target 50ms together")
}

func TestTokenPoolSizeIsDejaVusFormula(t *testing.T) {
	t.Parallel()
	// D = 8 machines, N = 100 tokens at 20 ms, a 500 ms prompt, 2% streaming overhead
	assert.InDelta(t, 8*100*0.02/(1.02*0.5+100*0.02), TokenPoolSize(8, 100, 0.02, 0.5, 1.02), 1e-12)
	assert.InDelta(t, 6.4, TokenPoolSize(8, 100, 0.02, 0.5, 1.0), 1e-12)
	assert.Zero(t, TokenPoolSize(8, 0, 0.02, 0.5, 1))
}

// A search over the whole catalog for a load that needs most of 64 GPUs: how long it takes
// is printed, not asserted (the machine is shared).
func TestSearchTimeAt64GPUs(t *testing.T) {
	t.Parallel()
	c := catalog.Default()
	offers := append(c.Offerings("aws"), c.Offerings("gcp")...)
	a, ok := planner.BuiltinArchitecture("OPT-30")
	require.True(t, ok)
	req := Request{Model: a, Rate: 120, PromptTokens: 1024, OutputTokens: 256, Offerings: offers, AllowSpot: true, MaxGPUs: 64}
	start := time.Now()
	res, err := Search(req)
	elapsed := time.Since(start)
	require.NoError(t, err)
	checkPlans(t, req, res)
	best := res.Plans[0]
	t.Logf("64-GPU search over %d offerings: %s (%d layouts scored, %d simulated); best %s on %s, %d GPUs, $%.2f/h",
		len(offers), elapsed.Round(time.Millisecond), res.Considered, res.Simulated, best.Mode, best.GPU, best.GPUs, best.USDPerHour)
}
