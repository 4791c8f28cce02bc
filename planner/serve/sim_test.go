package serve

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
)

// meanTTFT runs in and returns the mean time to first token over the requests after the
// warm-up, and the simulation.
func meanTTFT(in simInput) float64 {
	s := newSim(in)
	s.run()
	var sum float64
	skip := in.requests / 10
	for _, r := range s.reqs[skip:] {
		sum += r.first - r.arrive
	}
	return sum / float64(len(s.reqs)-skip)
}

// One replica prefilling one prompt at a time, with nothing to decode, is an M/D/1 queue:
// its mean wait is ρ·Y/(2(1−ρ)) (Pollaczek–Khinchine with deterministic service).
func TestSimulationMatchesMD1(t *testing.T) {
	t.Parallel()
	const y = 0.1
	for _, role := range []Role{RoleBoth, RolePrompt} {
		for _, rho := range []float64{0.2, 0.5} {
			pools := []simPool{{role: role, replicas: 1, prefill: []float64{0, y}, decode: []float64{0, 0.01}}}
			if role == RolePrompt {
				pools = append(pools, simPool{role: RoleToken, replicas: 1, decode: []float64{0, 0.01}})
			}
			in := simInput{pools: pools, rate: rho / y, output: 1, requests: 40000, seed: 7}
			want := y + rho*y/(2*(1-rho))
			assert.InEpsilon(t, want, meanTTFT(in), 0.03, "%s at ρ=%.1f", role, rho)
		}
	}
}

// At a load so low that requests never meet, a request's TTFT is one prefill and its TPOT
// one decode iteration at batch 1, exactly.
func TestSimulationAloneIsTheCostModel(t *testing.T) {
	t.Parallel()
	p, ok := newPool(testLayout(t, probeModel, gpu.H200, 1, 1, 1), RoleBoth, 512, 64)
	require.True(t, ok)
	lat := simulate(simInput{pools: []simPool{simPoolOf(&p, 1)}, rate: 1e-3, output: 64, requests: 200, seed: 1})
	assert.InDelta(t, p.prefill(1), lat.TTFTP50, 1e-9)
	assert.InDelta(t, p.prefill(1), lat.TTFTP99, 1e-9)
	assert.InDelta(t, p.decode(1), lat.TPOTP50, 1e-9)
	assert.InDelta(t, p.decode(1), lat.TPOTP99, 1e-9)

	// disaggregated: the second token also waits for the KV transfer
	pr, ok := newPool(testLayout(t, probeModel, gpu.H200, 1, 1, 1), RolePrompt, 512, 64)
	require.True(t, ok)
	tk, ok := newPool(testLayout(t, probeModel, gpu.H200, 1, 1, 1), RoleToken, 512, 64)
	require.True(t, ok)
	lat = simulate(simInput{pools: []simPool{simPoolOf(&pr, 1), simPoolOf(&tk, 1)}, rate: 1e-3, output: 64, requests: 200, seed: 1})
	assert.InDelta(t, pr.prefill(1), lat.TTFTP50, 1e-9)
	assert.InDelta(t, tk.decode(1)+pr.transfer/63, lat.TPOTP50, 1e-9)
}

// A batching replica under load: more requests decode together, so each iteration takes
// longer but the replica keeps up where one at a time would not.
func TestSimulationBatchesUnderLoad(t *testing.T) {
	t.Parallel()
	p, ok := newPool(testLayout(t, probeModel, gpu.H100, 1, 1, 8), RoleBoth, 512, 256)
	require.True(t, ok)
	alone := 1 / (p.prefill(1) + 255*p.decode(1)) // requests/s with no batching at all
	rate := 10 * alone
	lat := simulate(simInput{pools: []simPool{simPoolOf(&p, 1)}, rate: rate, output: 256, requests: 3000, seed: 3})
	assert.Greater(t, lat.TPOTP50, p.decode(1))
	assert.Less(t, lat.TPOTP99, 0.1, "a batch keeps each iteration short")
	assert.Less(t, lat.TTFTP99, 2.0, "and the queue finite")
}

func TestSimulationIsSeeded(t *testing.T) {
	t.Parallel()
	p, ok := newPool(testLayout(t, probeModel, gpu.H100, 1, 1, 8), RoleBoth, 1024, 128)
	require.True(t, ok)
	in := simInput{pools: []simPool{simPoolOf(&p, 2)}, rate: 8, output: 128, requests: 3000, seed: 11}
	a, b := simulate(in), simulate(in)
	assert.Equal(t, a, b)
	in.seed = 12
	assert.NotEqual(t, a, simulate(in))
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	xs := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	assert.Equal(t, 5.0, percentile(xs, 50))
	assert.Equal(t, 10.0, percentile(xs, 99))
	assert.Equal(t, 1.0, percentile(xs, 1))
	assert.Zero(t, percentile(nil, 99))
}
