package policy

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud/sim"
)

// randomMarket is a market of zones whose spot capacity follows an on/off Markov chain at a
// random tick: each zone flips between having none and having a random count of up to eight
// instances, with random rates (a spell lasts from a few ticks to hours), and the count moves
// within a spell now and then (a partial preemption, or more capacity), so droughts, flapping
// zones and calm spells all occur.
func randomMarket(t *testing.T, rng *rand.Rand) *Market {
	t.Helper()
	zones := []string{"us-east-2b", "us-west-2a", "us-west-2c", "us-east-1a"}[:1+rng.IntN(4)]
	gap := []time.Duration{time.Minute, 3 * time.Minute, 5 * time.Minute, 10 * time.Minute}[rng.IntN(4)]
	ticks := int(4 * 24 * time.Hour / gap)
	traces := map[sim.Key]*sim.Trace{}
	for _, z := range zones {
		tr := &sim.Trace{Source: z, Unit: sim.Instances, Gap: gap}
		most := 1 + rng.IntN(8)
		pOff, pOn := rng.Float64()*0.2, rng.Float64()*0.2
		pMove := rng.Float64() * 0.05
		on, c := rng.IntN(2) == 1, 1+rng.IntN(most)
		for i := range ticks {
			switch {
			case on && rng.Float64() < pOff || !on && rng.Float64() < pOn:
				on, c = !on, 1+rng.IntN(most)
			case on && rng.Float64() < pMove:
				c = 1 + rng.IntN(most) // capacity moves within a spell: partial preemptions
			}
			n := 0
			if on {
				n = c
			}
			tr.Steps = append(tr.Steps, sim.Step{At: time.Duration(i) * gap, Count: n})
		}
		traces[sim.Key{Zone: z, InstanceType: "p3.2xlarge"}] = tr
	}
	m, err := NewMarket("random", traces)
	require.NoError(t, err)
	return m
}

// On 500 random markets, jobs of random length, size and restart time, deadlines from 1.1x
// to 3x their spot-only run: schooner's policy meets every deadline that the best on-demand
// plan meets with room for one restart, and never pays more than 1.4x that plan. The margins
// and rules were tuned on the bundled trace; this keeps them honest on markets nobody looked
// at. (2026-12-07: the worst run paid 1.34x and 17 runs more than 1.1x; the policy of the
// morning, whose risk inflation stopped at 30% however fast a zone preempted, 1.45x and 23.)
func TestTheDeadlinePolicyKeepsEveryFeasibleDeadlineOnRandomMarkets(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	worst, dear := 0.0, 0
	for i := range 500 {
		m := randomMarket(t, rng)
		j := Job{Iterations: int64(100 + rng.IntN(2000)), CheckpointEvery: 25, MaxGPUs: 1 + rng.IntN(8),
			Restart: time.Duration(2+rng.IntN(6)) * time.Minute, Throughput: perfectScaling{}}
		factor := 1.1 + rng.Float64()*1.9
		deadline := time.Duration(float64(SpotOnlyDuration(j, m)) * factor)
		base := BestOnDemand(j, m, deadline)
		if !base.Met || base.Duration+j.Restart > deadline {
			continue
		}
		start := time.Duration(rng.IntN(int(m.Length/time.Minute)/2)) * time.Minute
		run, err := Simulate(j, m, DeadlineAware(), start, Options{Deadline: deadline})
		require.NoError(t, err)
		what := fmt.Sprintf("market %d: %d zones at %s, %d iterations on <= %d GPUs, restart %s, deadline %.2fx (%s), start %s",
			i, len(m.Zones), m.Gap, j.Iterations, j.MaxGPUs, j.Restart, factor, deadline, start)
		require.True(t, run.Met, "%s: finished %v at %s", what, run.Finished, run.Duration)
		ratio := run.CostUSD / base.CostUSD
		require.LessOrEqual(t, ratio, 1.4, "%s: paid %.2fx the best on-demand plan (%d preemptions, %d restarts)",
			what, ratio, run.Preemptions, run.Restarts)
		worst = max(worst, ratio)
		if ratio > 1.1 {
			dear++
		}
	}
	t.Logf("worst cost against the best on-demand plan: %.2fx; %d runs above 1.1x", worst, dear)
}
