package planner

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
)

// srModel is a model of l equal layers: paramsGiB of weights in total at TP 1 (TP 2 halves
// it), one layer taking perLayer seconds on an A100 (V100 2.5× slower, H100 2.5× faster,
// TP 2 1.6× faster), micro-batch sizes 1 and 2.
func srModel(l int, paramsGiB float64, perLayer float64) *ModelProfile {
	m := &ModelProfile{Name: "sr", SeqLen: 1024, Mem: map[int][]LayerMem{}, Compute: map[gpu.Type]*Compute{}}
	for _, tp := range []int{1, 2} {
		layers := make([]LayerMem, l)
		for i := range layers {
			layers[i] = LayerMem{
				ParamsFloats:    paramsGiB * gib / TrainingBytesPerParam / float64(l) / float64(tp),
				ActMemFloats:    2e7 / float64(tp),
				ActOutputFloats: 2e6,
				ActInputFloats:  2e6,
			}
		}
		m.Mem[tp] = layers
	}
	for g, speed := range map[gpu.Type]float64{gpu.A100_40: 1, gpu.V100: 0.4, gpu.H100: 2.5, gpu.A100_80: 1} {
		c := &Compute{GPU: g, Source: "test", Times: map[int]map[int][]LayerTime{}}
		for _, tp := range []int{1, 2} {
			c.Times[tp] = map[int][]LayerTime{}
			for _, mbs := range []int{1, 2} {
				t := perLayer / speed * float64(mbs) * 0.8
				if tp == 2 {
					t /= 1.6
				}
				layers := make([]LayerTime, l)
				for i := range layers {
					layers[i] = LayerTime{Fwd: t / 3, Bwd: 2 * t / 3, Update: t / 10}
				}
				c.Times[tp][mbs] = layers
			}
		}
		m.Compute[g] = c
	}
	return m
}

func srPool(g gpu.Type, zone string, gpus, perNode int, usd float64) Pool {
	region := zone[:strings.LastIndex(zone, "-")]
	return Pool{Region: region, Zone: zone, InstanceType: string(g) + "-node", GPU: g, GPUsPerNode: perNode, GPUs: gpus, USDPerGPUHour: usd}
}

func srNet() *Network { return exNetwork(rand.New(rand.NewPCG(1, 2))) }

func TestSearchBadInputs(t *testing.T) {
	t.Parallel()
	m := srModel(8, 10, 5*ms)
	pools := []Pool{srPool(gpu.A100_40, "us-central1-a", 8, 4, 3.67)}
	base := Request{Model: m, Network: srNet(), Pools: pools, GlobalBatch: 32}

	for _, c := range []struct {
		name string
		edit func(r *Request)
		want string
	}{
		{"no model", func(r *Request) { r.Model = nil }, "no model profile"},
		{"empty model", func(r *Request) { r.Model = &ModelProfile{Name: "empty"} }, `model "empty" has no layers`},
		{"no pools", func(r *Request) { r.Pools = nil }, "no GPU pools"},
		{"no network", func(r *Request) { r.Network = nil }, "no network"},
		{"no batch", func(r *Request) { r.GlobalBatch = 0 }, "global batch"},
		{"bad objective", func(r *Request) { r.Objective = "speed" }, "unknown objective"},
		{"no profiled GPU", func(r *Request) { r.Pools = []Pool{srPool(gpu.T4, "us-central1-a", 8, 4, 0.35)} },
			"no offered GPU has a profile for sr: offered T4-16, profiled A100-40, A100-80, H100-80, V100-16"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := base
			c.edit(&r)
			_, err := Search(r)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.False(t, errors.Is(err, ErrNoPlan), "a bad request is not a search that found nothing")
		})
	}
}

func TestSearchNothingFitsSaysTheShortfall(t *testing.T) {
	t.Parallel()
	// 8 layers of 400 GiB each at TP 1: even alone at TP 2 on an A100-80 a layer needs ~27 GiB
	// more than there is... use V100-16s only.
	m := srModel(4, 200, 5*ms) // 50 GiB per layer at TP 1, 25 at TP 2
	req := Request{Model: m, Network: srNet(), GlobalBatch: 8,
		Pools: []Pool{srPool(gpu.V100, "us-central1-a", 16, 4, 2.55)}}
	requireNoPlan(t, req, "does not fit in the memory of any offered GPU", "at TP 2", "GiB short")
}

func TestSearchNotEnoughGPUs(t *testing.T) {
	t.Parallel()
	// 60 GiB of weights: needs at least 6 V100-16 (TP or stages); only 4 offered.
	m := srModel(8, 60, 5*ms)
	req := Request{Model: m, Network: srNet(), GlobalBatch: 8,
		Pools: []Pool{srPool(gpu.V100, "us-central1-a", 4, 4, 2.55)}}
	requireNoPlan(t, req, "not enough GPUs", "4 usable GPUs")
}

func TestSearchImpossibleBudgetAndFloorSayWhatIsAchievable(t *testing.T) {
	t.Parallel()
	m := srModel(8, 10, 5*ms)
	req := Request{Model: m, Network: srNet(), GlobalBatch: 32,
		Pools: []Pool{srPool(gpu.A100_40, "us-central1-a", 8, 4, 3.67), srPool(gpu.V100, "us-central1-a", 8, 4, 2.55)}}

	cheap := req
	cheap.Objective = MinCost
	cheapest, err := Search(cheap)
	require.NoError(t, err)
	fast, err := Search(req)
	require.NoError(t, err)

	r := req
	r.MaxUSDPerIteration = cheapest.Best.Estimate.USDPerIteration / 2
	requireNoPlan(t, r, "the cheapest feasible plan costs $", trimFloat(cheapest.Best.Estimate.USDPerIteration))

	r = cheap
	r.MinItersPerSec = fast.Best.Estimate.Throughput * 2
	requireNoPlan(t, r, "the best achievable is", trimFloat(fast.Best.Estimate.Throughput))
}

// requireNoPlan runs Search on req and requires it to find no plan (ErrNoPlan) with an error
// that mentions each of wants: the failures must say why, not just that they failed.
func requireNoPlan(t *testing.T, req Request, wants ...string) {
	t.Helper()
	_, err := Search(req)
	require.ErrorIs(t, err, ErrNoPlan)
	for _, want := range wants {
		assert.Contains(t, err.Error(), want)
	}
}

func trimFloat(v float64) string { return fmt.Sprintf("%.6g", v) }

func TestSearchCostPipelinesWhenOneCheapGPUIsTooSmall(t *testing.T) {
	t.Parallel()
	// 30 GiB of weights with Adam: no V100-16 holds it alone, even at TP 2 (15 GiB + overhead);
	// an A100-80 does, at four times the price. The cheapest plan pipelines over V100s.
	m := srModel(8, 30, 5*ms)
	req := Request{Model: m, Network: srNet(), GlobalBatch: 16, Objective: MinCost,
		Pools: []Pool{
			srPool(gpu.V100, "us-central1-a", 16, 4, 1.0),
			srPool(gpu.A100_80, "us-central1-a", 8, 4, 8.0),
		}}
	res, err := Search(req)
	require.NoError(t, err)
	best := res.Best
	require.Greater(t, len(best.Plan.Stages), 1, "best: %s", SummarizePlan(&best.Plan))
	for _, st := range best.Plan.Stages {
		assert.Equal(t, gpu.V100, st.Replicas[0].GPU)
	}
	assert.True(t, best.Estimate.Fits)

	// every single-stage plan (on the A100-80) is dearer
	single := req
	single.Pools = req.Pools[1:]
	a100, err := Search(single)
	require.NoError(t, err)
	assert.Less(t, best.Estimate.USDPerIteration, a100.Best.Estimate.USDPerIteration)

	// and the search says why the V100 cannot hold the model alone
	var oom bool
	for _, r := range res.Rejected {
		if r.Reason == RejectOOM && strings.Contains(r.Summary, "V100-16") {
			oom = true
		}
	}
	assert.True(t, oom, "rejections: %+v", res.Rejected)
}

func TestSearchHeterogeneousStagesBalanceBySpeed(t *testing.T) {
	t.Parallel()
	// 4 A100s and 4 V100s, model fits either: the fastest plan uses both, giving the A100
	// stage more layers than the V100 stage.
	m := srModel(12, 4, 5*ms)
	req := Request{Model: m, Network: srNet(), GlobalBatch: 64, MicroBatches: []int{1},
		Pools: []Pool{srPool(gpu.A100_40, "us-central1-a", 4, 4, 3.67), srPool(gpu.V100, "us-central1-a", 4, 4, 2.55)}}
	res, err := Search(req)
	require.NoError(t, err)
	p := res.Best.Plan
	layers := map[gpu.Type]int{}
	for _, st := range p.Stages {
		layers[st.Replicas[0].GPU] += st.LastLayer - st.FirstLayer + 1
	}
	require.Contains(t, layers, gpu.A100_40, SummarizePlan(&p))
	require.Contains(t, layers, gpu.V100, SummarizePlan(&p))
	assert.Greater(t, layers[gpu.A100_40], layers[gpu.V100], SummarizePlan(&p))

	// faster than either type alone
	for _, pool := range req.Pools {
		only := req
		only.Pools = []Pool{pool}
		r, err := Search(only)
		require.NoError(t, err)
		assert.Less(t, res.Best.Estimate.IterTime, r.Best.Estimate.IterTime, "only %s: %s", pool.GPU, SummarizePlan(&r.Best.Plan))
	}
}

func TestSearchEstimatesComeFromTheSimulator(t *testing.T) {
	t.Parallel()
	for _, req := range exInstances(3, 4, 20, 8) {
		res, err := Search(req)
		if errors.Is(err, ErrNoPlan) {
			continue
		}
		require.NoError(t, err)
		for _, c := range append([]Candidate{res.Best}, res.Next...) {
			est, err := Simulate(&c.Plan, req.Model, req.Network)
			require.NoError(t, err)
			assert.Equal(t, est, c.Estimate)
			assert.True(t, c.Estimate.Fits)
		}
		keys := map[string]bool{}
		for _, c := range append([]Candidate{res.Best}, res.Next...) {
			k := planKey(&c.Plan)
			assert.False(t, keys[k], "duplicate plan %s", SummarizePlan(&c.Plan))
			keys[k] = true
		}
	}
}

func TestSearchInternalScoreMatchesSimulator(t *testing.T) {
	t.Parallel()
	for _, req := range exInstances(5, 6, 30, 10) {
		for _, o := range []Objective{MaxThroughput, MinCost} {
			req.Objective = o
			s, err := newSearch(req)
			require.NoError(t, err)
			s.explore()
			for _, f := range s.top.list() {
				p, ok := s.materialise(f)
				require.True(t, ok)
				est, err := s.sim.Simulate(p)
				require.NoError(t, err)
				assert.InEpsilon(t, est.IterTime, f.t, 1e-12, SummarizePlan(p))
				if est.USDPerIteration > 0 {
					assert.InEpsilon(t, est.USDPerIteration, f.usd, 1e-12, SummarizePlan(p))
				}
				assert.True(t, est.Fits)
			}
		}
	}
}

func TestSearchRejectsOverBudgetAlternative(t *testing.T) {
	t.Parallel()
	m := srModel(8, 10, 5*ms)
	req := Request{Model: m, Network: srNet(), GlobalBatch: 32,
		Pools: []Pool{srPool(gpu.H100, "us-central1-a", 8, 4, 12), srPool(gpu.V100, "us-central1-a", 8, 4, 1)}}
	fast, err := Search(req)
	require.NoError(t, err)
	req.MaxUSDPerIteration = fast.Best.Estimate.USDPerIteration * 0.7
	res, err := Search(req)
	require.NoError(t, err)
	assert.LessOrEqual(t, res.Best.Estimate.USDPerIteration, req.MaxUSDPerIteration)
	var budget *Rejection
	for i := range res.Rejected {
		if res.Rejected[i].Reason == RejectBudget {
			budget = &res.Rejected[i]
		}
	}
	require.NotNil(t, budget, "%+v", res.Rejected)
	assert.Equal(t, SummarizePlan(&fast.Best.Plan), budget.Summary)
}

func TestReplannerCachesUnchangedAvailability(t *testing.T) {
	t.Parallel()
	m := srModel(24, 20, 5*ms)
	pools := []Pool{
		srPool(gpu.A100_40, "us-central1-a", 32, 4, 3.67),
		srPool(gpu.V100, "us-central1-a", 64, 4, 2.55),
		srPool(gpu.V100, "us-central1-b", 32, 4, 2.55),
	}
	req := Request{Model: m, Network: srNet(), Pools: pools, GlobalBatch: 256}
	var r Replanner

	start := time.Now()
	first, err := r.Plan(req)
	require.NoError(t, err)
	cold := time.Since(start)

	// the same availability, listed in another order and split differently
	again := req
	again.Pools = []Pool{pools[2], pools[1], pools[0]}
	again.Pools[1].GPUs = 32
	again.Pools = append(again.Pools, srPool(gpu.V100, "us-central1-a", 32, 4, 2.55))
	start = time.Now()
	second, err := r.Plan(again)
	require.NoError(t, err)
	warm := time.Since(start)
	assert.Same(t, first, second)
	assert.Less(t, warm, cold/10, "cold %v, warm %v", cold, warm)
	assert.Less(t, warm, time.Millisecond)

	// a change of availability searches again
	changed := req
	changed.Pools = pools[:2]
	third, err := r.Plan(changed)
	require.NoError(t, err)
	assert.NotSame(t, first, third)

	// concurrent callers of one new key share one search
	fresh := req
	fresh.GlobalBatch = 128
	var wg sync.WaitGroup
	results := make([]*Result, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = r.Plan(fresh)
		}()
	}
	wg.Wait()
	for _, res := range results {
		assert.Same(t, results[0], res)
	}
}

func TestReplanPrefersSurvivorsWithinOnePercent(t *testing.T) {
	t.Parallel()
	m := srModel(8, 10, 5*ms)
	net := srNet()
	survivors := []Pool{{Region: "us-central1", Zone: "us-central1-a", InstanceType: "held", GPU: gpu.A100_40, GPUsPerNode: 4, GPUs: 4, USDPerGPUHour: 3.67}}
	// the same GPUs 0.5% cheaper elsewhere in the zone: plain search takes them, a replan keeps
	// what it holds.
	offers := []Pool{{Region: "us-central1", Zone: "us-central1-a", InstanceType: "new", GPU: gpu.A100_40, GPUsPerNode: 4, GPUs: 4, USDPerGPUHour: 3.65}}
	req := Request{Model: m, Network: net, GlobalBatch: 16, Objective: MinCost}

	plain := req
	plain.Pools = append(append([]Pool(nil), survivors...), offers...)
	res, err := Search(plain)
	require.NoError(t, err)
	assert.Equal(t, "new", res.Best.Plan.Stages[0].Replicas[0].InstanceType)

	var r Replanner
	rep, err := r.Replan(&res.Best.Plan, survivors, offers, req)
	require.NoError(t, err)
	for _, st := range rep.Best.Plan.Stages {
		for _, rp := range st.Replicas {
			assert.Equal(t, "held", rp.InstanceType, SummarizePlan(&rep.Best.Plan))
		}
	}
	assert.LessOrEqual(t, rep.Best.Estimate.USDPerIteration, res.Best.Estimate.USDPerIteration*1.01)

	// a much cheaper offer wins
	offers[0].USDPerGPUHour = 2
	rep, err = r.Replan(&res.Best.Plan, survivors, offers, req)
	require.NoError(t, err)
	assert.Equal(t, "new", rep.Best.Plan.Stages[0].Replicas[0].InstanceType)
}

func TestSearchMergesZonesOfLargeOffers(t *testing.T) {
	t.Parallel()
	// 5 zones of 32 A100s: above mergeRegionsAbove, so the four us-central1 zones are searched
	// as one class (H6) and stages placed in zones afterwards. The plan must still put each
	// stage in one zone within capacity, and come close to the exact per-zone search.
	m := srModel(12, 30, 5*ms)
	var pools []Pool
	for _, z := range []string{"us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f", "us-west1-b"} {
		pools = append(pools, srPool(gpu.A100_40, z, 32, 4, 3.67))
	}
	req := Request{Model: m, Network: srNet(), Pools: pools, GlobalBatch: 128}
	s, err := newSearch(req)
	require.NoError(t, err)
	assert.Len(t, s.classes, 2, "us-central1 merged, us-west1 alone")

	merged, err := Search(req)
	require.NoError(t, err)
	req.exactZones = true
	exact, err := Search(req)
	require.NoError(t, err)

	for _, c := range append([]Candidate{merged.Best}, merged.Next...) {
		used := map[string]int{}
		for _, st := range c.Plan.Stages {
			for _, r := range st.Replicas {
				assert.Equal(t, st.Replicas[0].Zone, r.Zone, "a stage's replicas share a zone")
				used[r.Zone] += r.TP
			}
		}
		for z, n := range used {
			assert.LessOrEqual(t, n, 32, "zone %s over capacity in %s", z, SummarizePlan(&c.Plan))
		}
		assert.True(t, c.Estimate.Fits)
	}
	assert.LessOrEqual(t, exact.Best.Estimate.IterTime, merged.Best.Estimate.IterTime*(1+1e-9))
	assert.LessOrEqual(t, merged.Best.Estimate.IterTime, exact.Best.Estimate.IterTime*1.1,
		"merged %s, exact %s", SummarizePlan(&merged.Best.Plan), SummarizePlan(&exact.Best.Plan))
	t.Logf("H6: %s in %v; exact: %s in %v", SummarizePlan(&merged.Best.Plan), merged.Elapsed, SummarizePlan(&exact.Best.Plan), exact.Elapsed)
}
