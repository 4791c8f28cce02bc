package planner

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
)

const eps = 1e-9

// a100 takes 1 ms forward, 2 ms backward and 0.5 ms update per layer; v100 three times as long.
var (
	a100Time = LayerTime{Fwd: 1 * ms, Bwd: 2 * ms, Update: 0.5 * ms}
	v100Time = LayerTime{Fwd: 3 * ms, Bwd: 6 * ms, Update: 1.5 * ms}
)

func TestSimulateOneGPU(t *testing.T) {
	t.Parallel()
	m := toyA100()
	p := plan(8, 1, stage(0, 3, replica(gpu.A100_40, 1, "us-central1-a", 4)))

	est := simulateOnGigabit(t, p, m)

	// N_b·(fwd+bwd) + update = 8·(4·3 ms) + 4·0.5 ms.
	assert.InDelta(t, 98*ms, est.IterTime, eps)
	assert.InDelta(t, 98*ms, est.PipelineTime, eps)
	assert.Zero(t, est.SyncTime)
	assert.InDelta(t, 1/(98*ms), est.Throughput, 1e-6)
	assert.InDelta(t, 4.0, est.USDPerHour, eps)
	assert.Zero(t, est.EgressUSDPerIteration)
	assert.InDelta(t, 4*0.098/3600, est.USDPerIteration, eps)
	require.Len(t, est.Stages, 1)
	s := est.Stages[0]
	assert.InDelta(t, 12*ms, s.Compute, eps)
	assert.Zero(t, s.Comm)
	assert.InDelta(t, 2*ms, s.Update, eps)
	// 4e6 params × 24 B + 4e6 activation floats × 4 B × 1 in flight + overhead.
	assert.InDelta(t, 4e6*24+4e6*4+MemOverheadBytes, s.PeakMemBytes, 1)
	assert.InDelta(t, 40.0*gib, s.MemLimitBytes, 1)
	assert.True(t, s.Fits)
	assert.True(t, est.Fits)
	assert.False(t, est.Derived)
}

func TestSimulateTwoStagePipeline(t *testing.T) {
	t.Parallel()
	// 1e6 floats of activation per sample = 4 MB, 4 ms over a 1 GB/s link.
	m := toyA100()
	p := twoA100Stages(1)

	est := simulateOnGigabit(t, p, m)

	// comp = 6 ms per stage; stage 0 sends activations (4 ms), stage 1 sends gradients back
	// (4 ms); straggler = 10 ms. T = 7·10 + (4+4) + (6+6) + 1 ms update.
	assert.InDelta(t, 91*ms, est.IterTime, eps)
	for i, s := range est.Stages {
		assert.InDelta(t, 6*ms, s.Compute, eps, "stage %d", i)
		assert.InDelta(t, 4*ms, s.Comm, eps, "stage %d", i)
		assert.InDelta(t, 1*ms, s.Update, eps, "stage %d", i)
	}
	// 1F1B: stage 0 keeps two microbatches in flight, stage 1 one.
	assert.InDelta(t, 2e6*24+2e6*4*2+MemOverheadBytes, est.Stages[0].PeakMemBytes, 1)
	assert.InDelta(t, 2e6*24+2e6*4*1+MemOverheadBytes, est.Stages[1].PeakMemBytes, 1)
	assert.InDelta(t, 8.0, est.USDPerHour, eps)
}

func TestSimulateMiddleStagePaysBothWays(t *testing.T) {
	t.Parallel()
	m := withCompute(toyModel(6, 1e6, 1e6, 1e6), gpu.A100_40, 1, 1, a100Time)
	r := replica(gpu.A100_40, 1, "us-central1-a", 4)
	p := plan(4, 1, stage(0, 1, r), stage(2, 3, r), stage(4, 5, r))

	est := simulateOnGigabit(t, p, m)

	assert.InDelta(t, 4*ms, est.Stages[0].Comm, eps)
	assert.InDelta(t, 8*ms, est.Stages[1].Comm, eps)
	assert.InDelta(t, 4*ms, est.Stages[2].Comm, eps)
	// straggler = 6 + 8 ms; T = 3·14 + (4+8+4) + 18 + 1 ms.
	assert.InDelta(t, 77*ms, est.IterTime, eps)
}

func TestSimulateDataParallelSync(t *testing.T) {
	t.Parallel()
	// 4 layers × 1e8 params = 1.6e9 bytes of fp32 gradients: 3 full 5e8-byte buckets and a
	// 1e8-byte one. Ring of 2: each bucket is 2 steps of bucket/2 bytes over 1 GB/s + 1 ms,
	// which all 8 GPUs of the machine share while each runs its ring: 1/8 GB/s each.
	m := withCompute(toyModel(4, 1e8, 1e6, 1e6), gpu.A100_40, 1, 1, a100Time)
	r := replica(gpu.A100_40, 1, "us-central1-a", 4)
	p := plan(8, 1, stage(0, 3, r, r))

	est, err := Simulate(p, m, flatNet(flatLink(1, 1*ms)))
	require.NoError(t, err)

	wantSync := 3*2*(8*0.25+0.001) + 2*(8*0.05+0.001)
	assert.InDelta(t, wantSync, est.SyncTime, eps)
	assert.InDelta(t, wantSync, AllReduceTime(1.6e9, 2, flatLink(1, 1*ms).SharedBy(8)), eps)
	// N_b = 8/(1·2) = 4 microbatches per pipeline.
	assert.InDelta(t, 4*12*ms+2*ms, est.PipelineTime, eps)
	assert.InDelta(t, est.PipelineTime+wantSync, est.IterTime, eps)
	assert.Zero(t, est.EgressUSDPerIteration, "one zone: no egress")
	assert.InDelta(t, 8.0, est.USDPerHour, eps)
}

func TestSimulateSyncIsSlowestStage(t *testing.T) {
	t.Parallel()
	// Stage 0 holds 3 layers' gradients, stage 1 one: the stages all-reduce concurrently,
	// so T_sync is stage 0's.
	m := withCompute(toyModel(4, 1e8, 1e6, 1e6), gpu.A100_40, 1, 1, a100Time)
	r := replica(gpu.A100_40, 1, "us-central1-a", 4)
	l := flatLink(1, 0)
	p := plan(8, 1, stage(0, 2, r, r), stage(3, 3, r, r))

	est, err := Simulate(p, m, flatNet(l))
	require.NoError(t, err)
	assert.InDelta(t, AllReduceTime(3e8*GradBytesPerParam, 2, l.SharedBy(8)), est.SyncTime, eps)
}

func TestSimulateSyncOverSlowestLink(t *testing.T) {
	t.Parallel()
	// Two replicas in one zone and one in another: the ring crosses the slow inter-zone link.
	m := withCompute(toyModel(4, 1e8, 1e6, 1e6), gpu.A100_40, 1, 1, a100Time)
	fast, slow := flatLink(10, 0), flatLink(0.5, 0)
	n := flatNet(fast)
	n.InterZone, n.InterRegion = slow, slow
	p := plan(6, 1, stage(0, 3,
		replica(gpu.A100_40, 1, "us-central1-a", 4),
		replica(gpu.A100_40, 1, "us-central1-a", 4),
		replica(gpu.A100_40, 1, "us-central1-b", 4)))

	est, err := Simulate(p, m, n)
	require.NoError(t, err)
	assert.InDelta(t, AllReduceTime(1.6e9, 3, slow.SharedBy(8)), est.SyncTime, eps)
	// Two ring edges cross zones, each carrying 2(D−1)/D of the gradients, at 0.01 $/GB.
	assert.InDelta(t, 2*(4.0/3)*1.6*0.01, est.EgressUSDPerIteration, 1e-12)
}

func TestSimulateHeterogeneousStraggler(t *testing.T) {
	t.Parallel()
	m := mixedModel(4, 1e6, 1e6, 1e6)
	p := plan(8, 1,
		stage(0, 1, replica(gpu.A100_40, 1, "us-central1-a", 4)),
		stage(2, 3, replica(gpu.V100, 1, "us-central1-a", 2.5)),
	)

	est := simulateOnGigabit(t, p, m)

	// V100 stage: 2·9 ms compute + 4 ms gradients back = 22 ms straggler.
	// T = 7·22 + 8 + (6+18) + 3 ms (V100 update of two layers).
	assert.InDelta(t, 18*ms, est.Stages[1].Compute, eps)
	assert.InDelta(t, 3*ms, est.Stages[1].Update, eps)
	assert.InDelta(t, (7*22+8+24+3)*ms, est.IterTime, eps)
	assert.InDelta(t, 6.5, est.USDPerHour, eps)
}

func TestSimulateHeterogeneousDataParallel(t *testing.T) {
	t.Parallel()
	m := toyModel(4, 1e6, 1e6, 1e6)
	withCompute(m, gpu.A100_40, 1, 1, a100Time)
	withCompute(m, gpu.V100, 2, 1, v100Time)
	p := plan(8, 1, stage(0, 3,
		replica(gpu.A100_40, 1, "us-central1-a", 4),
		replica(gpu.V100, 2, "us-central1-a", 2.5)))

	est := simulateOnGigabit(t, p, m)

	s := est.Stages[0]
	assert.InDelta(t, 36*ms, s.Compute, eps, "the stage's compute is its slowest replica's")
	assert.InDelta(t, 4*36*ms+6*ms, est.PipelineTime, eps, "the V100 pipeline, 4 microbatches")
	assert.InDelta(t, 16.0*gib, s.MemLimitBytes, 1, "the smallest GPU")
	assert.InDelta(t, 4e6*24+4e6*4+MemOverheadBytes, s.PeakMemBytes, 1, "the TP-1 replica holds the most")
	// Mixed TP: the TP-1 replica all-reduces the whole stage's gradients.
	assert.InDelta(t, AllReduceTime(4e6*GradBytesPerParam, 2, flatLink(1, 0).SharedBy(8)), est.SyncTime, eps)
	assert.InDelta(t, 4+2*2.5, est.USDPerHour, eps)
}

func TestSimulatePipelinesAreReplicaColumns(t *testing.T) {
	t.Parallel()
	m := mixedModel(4, 1e6, 1e6, 1e6)
	a := replica(gpu.A100_40, 1, "us-central1-a", 4)
	v := replica(gpu.V100, 1, "us-central1-a", 2.5)
	n := flatNet(flatLink(1, 0))

	// Pipeline 0 all A100, pipeline 1 all V100: the V100 pipeline decides.
	aligned, err := Simulate(plan(16, 1, stage(0, 1, a, v), stage(2, 3, a, v)), m, n)
	require.NoError(t, err)
	// Each pipeline mixes: both take the mixed pipeline's time, with a shorter fill and drain.
	crossed, err := Simulate(plan(16, 1, stage(0, 1, a, v), stage(2, 3, v, a)), m, n)
	require.NoError(t, err)

	const nb = 8
	vv := (nb-1)*22*ms + 8*ms + 36*ms + 3*ms
	av := (nb-1)*22*ms + 8*ms + 24*ms + 3*ms
	assert.InDelta(t, vv, aligned.PipelineTime, eps)
	assert.InDelta(t, av, crossed.PipelineTime, eps)
	// Per stage, both report the worst replica.
	assert.Equal(t, aligned.Stages, crossed.Stages)
}

func TestSimulateSkipsRepeatedPipelinesCorrectly(t *testing.T) {
	t.Parallel()
	m := toyModel(4, 1e8, 1e6, 1e6)
	withCompute(m, gpu.A100_40, 1, 1, a100Time)
	r := replica(gpu.A100_40, 1, "us-central1-a", 4)
	s1 := replica(gpu.A100_40, 1, "us-central1-b", 4)
	n := flatNet(flatLink(1, 0))

	same := plan(64, 1, stage(0, 1, r, r, r, r), stage(2, 3, s1, s1, s1, s1))
	// Instance types do not change the estimate but defeat the shortcut.
	distinct := plan(64, 1, stage(0, 1, r, r, r, r), stage(2, 3, s1, s1, s1, s1))
	for i := range distinct.Stages {
		for j := range distinct.Stages[i].Replicas {
			distinct.Stages[i].Replicas[j].InstanceType = string(rune('a' + j))
		}
	}
	want, err := Simulate(distinct, m, n)
	require.NoError(t, err)
	got, err := Simulate(same, m, n)
	require.NoError(t, err)
	assert.InDelta(t, want.IterTime, got.IterTime, eps)
	assert.InDelta(t, want.EgressUSDPerIteration, got.EgressUSDPerIteration, 1e-12)
	assert.InDelta(t, want.USDPerHour, got.USDPerHour, eps)
	assert.InDelta(t, 32.0, got.USDPerHour, eps)
	assert.Greater(t, got.EgressUSDPerIteration, 0.0)
}

func TestSimulateEgressOnlyAcrossZones(t *testing.T) {
	t.Parallel()
	m := toyA100()
	n := flatNet(flatLink(1, 0))
	twoStages := func(z0, r0, z1, r1 string) *Plan {
		a := replica(gpu.A100_40, 1, z0, 4)
		a.Region = r0
		b := replica(gpu.A100_40, 1, z1, 4)
		b.Region = r1
		return plan(8, 1, stage(0, 1, a), stage(2, 3, b))
	}
	// 8 microbatches × 4 MB each way = 0.032 GB each way.
	cases := []struct {
		name string
		plan *Plan
		want float64
	}{
		{"same zone", twoStages("us-central1-a", "us-central1", "us-central1-a", "us-central1"), 0},
		{"across zones", twoStages("us-central1-a", "us-central1", "us-central1-b", "us-central1"), 2 * 0.032 * 0.01},
		{"across regions", twoStages("us-central1-a", "us-central1", "us-west1-b", "us-west1"), 2 * 0.032 * 0.02},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			est, err := Simulate(c.plan, m, n)
			require.NoError(t, err)
			assert.InDelta(t, c.want, est.EgressUSDPerIteration, 1e-12)
			assert.InDelta(t, est.USDPerHour*est.IterTime/3600+c.want, est.USDPerIteration, 1e-12)
		})
	}
}

func TestSimulateMemoryOverflow(t *testing.T) {
	t.Parallel()
	// 4 layers × 2e8 params × 24 B = 19.2 GB: too much for one V100-16, fine split over TP 2.
	m := toyModel(4, 2e8, 1e7, 1e6)
	withCompute(m, gpu.V100, 1, 1, v100Time)
	withCompute(m, gpu.V100, 2, 1, v100Time)
	n := flatNet(flatLink(1, 0))

	tp1, err := Simulate(plan(4, 1, stage(0, 3, replica(gpu.V100, 1, "us-central1-a", 2.5))), m, n)
	require.NoError(t, err, "a plan that does not fit is still simulated")
	assert.False(t, tp1.Fits)
	assert.False(t, tp1.Stages[0].Fits)
	assert.InDelta(t, 8e8*24+4e7*4+MemOverheadBytes, tp1.Stages[0].PeakMemBytes, 1)
	assert.Greater(t, tp1.Stages[0].PeakMemBytes, tp1.Stages[0].MemLimitBytes)

	tp2, err := Simulate(plan(4, 1, stage(0, 3, replica(gpu.V100, 2, "us-central1-a", 2.5))), m, n)
	require.NoError(t, err)
	assert.True(t, tp2.Fits)
	assert.InDelta(t, 4e8*24+2e7*4+MemOverheadBytes, tp2.Stages[0].PeakMemBytes, 1)
}

func TestSimulateUnevenSplitBeatsEvenOnMixedGPUs(t *testing.T) {
	t.Parallel()
	// Stage 0 on A100 (3 ms per layer), stage 1 on V100 (9 ms): giving the A100 three
	// layers for each V100 layer balances the pipeline.
	m := mixedModel(8, 1e6, 1e6, 1e5)
	n := flatNet(flatLink(100, 0))
	split := func(k int) *Plan {
		return plan(32, 1,
			stage(0, k-1, replica(gpu.A100_40, 1, "us-central1-a", 4)),
			stage(k, 7, replica(gpu.V100, 1, "us-central1-a", 2.5)))
	}

	even, err := Simulate(split(4), m, n)
	require.NoError(t, err)
	uneven, err := Simulate(split(6), m, n)
	require.NoError(t, err)
	assert.Less(t, uneven.IterTime, 0.6*even.IterTime)

	best, bestK := even.IterTime, 4
	for k := 1; k < 8; k++ {
		est, err := Simulate(split(k), m, n)
		require.NoError(t, err)
		if est.IterTime < best {
			best, bestK = est.IterTime, k
		}
	}
	assert.Equal(t, 6, bestK)
}

func TestSimulateDerivedProfile(t *testing.T) {
	t.Parallel()
	m := toyA100()
	withCompute(m, gpu.H100, 1, 1, a100Time)
	m.Compute[gpu.H100].Derived = true
	n := flatNet(flatLink(1, 0))

	measured, err := Simulate(plan(8, 1, stage(0, 3, replica(gpu.A100_40, 1, "z", 4))), m, n)
	require.NoError(t, err)
	assert.False(t, measured.Derived)
	derived, err := Simulate(plan(8, 1, stage(0, 1, replica(gpu.A100_40, 1, "z", 4)), stage(2, 3, replica(gpu.H100, 1, "z", 8))), m, n)
	require.NoError(t, err)
	assert.True(t, derived.Derived)
}

func TestSimulateGPUWithoutDatasheet(t *testing.T) {
	t.Parallel()
	// A profiled GPU schooner has no datasheet for: simulated, memory not checked.
	rtx := gpu.Type("RTX-3090")
	m := withCompute(toyModel(4, 1e9, 1e6, 1e6), rtx, 1, 1, a100Time)
	est, err := Simulate(plan(8, 1, stage(0, 3, replica(rtx, 1, "z", 1))), m, flatNet(flatLink(1, 0)))
	require.NoError(t, err)
	assert.Zero(t, est.Stages[0].MemLimitBytes)
	assert.True(t, est.Fits)
}

func TestSimulateNeedsNetworkAndModel(t *testing.T) {
	t.Parallel()
	m := toyA100()
	p := plan(8, 1, stage(0, 3, replica(gpu.A100_40, 1, "z", 4)))
	_, err := Simulate(p, m, nil)
	assert.ErrorContains(t, err, "no network")
	_, err = Simulate(p, nil, flatNet(flatLink(1, 0)))
	assert.ErrorContains(t, err, "no model profile")
}

func TestSimStageComputeAndMemoryMatchDirectSums(t *testing.T) {
	t.Parallel()
	m := toyModel(10, 0, 0, 0)
	for i := range m.Mem[1] {
		m.Mem[1][i] = LayerMem{ParamsFloats: float64(1e6 * (i + 1)), ActMemFloats: float64(3e5 * (i + 2))}
	}
	times := make([]LayerTime, 10)
	for i := range times {
		times[i] = LayerTime{Fwd: float64(i+1) * ms, Bwd: float64(2*i+1) * ms, Update: float64(i) * 0.1 * ms}
	}
	m.Compute[gpu.A100_40] = &Compute{GPU: gpu.A100_40, Times: map[int]map[int][]LayerTime{1: {2: times}}}
	s := NewSim(m, nil)

	for first := 0; first < 10; first++ {
		for last := first; last < 10; last++ {
			var fb, up float64
			for _, l := range times[first : last+1] {
				fb += l.Fwd + l.Bwd
				up += l.Update
			}
			gotFB, gotUp, ok := s.StageCompute(gpu.A100_40, 1, 2, first, last)
			require.True(t, ok)
			assert.InDelta(t, fb, gotFB, 1e-12)
			assert.InDelta(t, up, gotUp, 1e-12)

			want, ok := PeakMemory(m, gpu.A100_40, 1, 2, first, last, 1, 4, 2)
			require.True(t, ok)
			got, ok := s.StagePeakMemory(gpu.A100_40, 1, 2, first, last, 1, 4, 2)
			require.True(t, ok)
			assert.InDelta(t, want, got, 1e-3)
		}
	}
	_, _, ok := s.StageCompute(gpu.A100_40, 2, 2, 0, 1)
	assert.False(t, ok, "tp 2 not profiled")
	_, _, ok = s.StageCompute(gpu.A100_40, 1, 1, 0, 1)
	assert.False(t, ok, "mbs 1 not profiled")
	_, _, ok = s.StageCompute(gpu.A100_40, 1, 2, 3, 10)
	assert.False(t, ok, "past the last layer")
	_, ok = s.StagePeakMemory(gpu.A100_40, 4, 2, 0, 1, 0, 1, 1)
	assert.False(t, ok, "no memory profile for tp 4")
}

func TestSimIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	s := NewSim(benchModel(), flatNet(flatLink(2.5, 1e-5)))
	p := benchPlan(4, 4, true)
	want, err := s.Simulate(p)
	require.NoError(t, err)
	done := make(chan Estimate)
	for range 4 {
		go func() {
			var last Estimate
			for range 200 {
				last, _ = s.Simulate(p)
			}
			done <- last
		}()
	}
	for range 4 {
		assert.Equal(t, want, <-done)
	}
}

func TestSimulateUpdatePerStageCountsTheStepOnce(t *testing.T) {
	t.Parallel()
	// Sailor's profiles repeat one stage's optimizer step in every layer: summing it over a
	// stage's layers would count it once per layer.
	m := toyA100()
	p := twoA100Stages(0)
	summed := simulateOnGigabit(t, p, m)
	assert.InDelta(t, 1.5*ms, summed.Stages[1].Update, eps, "per-layer steps add up over the stage's three layers")

	m.Compute[gpu.A100_40].UpdatePerStage = true
	once := simulateOnGigabit(t, p, m)
	assert.InDelta(t, 0.5*ms, once.Stages[0].Update, eps)
	assert.InDelta(t, 0.5*ms, once.Stages[1].Update, eps, "a stage's step is counted once, whatever its layers")
	assert.InDelta(t, summed.IterTime-1*ms, once.IterTime, eps, "the pipeline waits for the slowest stage's step: 0.5 ms, not 1.5 ms")
	_, u, ok := NewSim(m, nil).StageCompute(gpu.A100_40, 1, 1, 1, 3)
	require.True(t, ok)
	assert.InDelta(t, 0.5*ms, u, eps, "the search's view agrees with Simulate")
}
