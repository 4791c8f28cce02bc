package policy

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud/sim"
)

// perfectScaling is a throughput model without the planner: 100 s of GPU time per
// iteration, split evenly over the GPUs held, wherever they are.
type perfectScaling struct{}

func (perfectScaling) IterSeconds(p Placement) float64 {
	if p.GPUs() == 0 {
		return math.Inf(1)
	}
	return 100 / float64(p.GPUs())
}

// steps builds a market of p3.2xlarge (1 GPU) from per-zone capacities, one value per hour.
func steps(t *testing.T, hourly map[string][]int) *Market {
	t.Helper()
	traces := map[sim.Key]*sim.Trace{}
	for zone, counts := range hourly {
		tr := &sim.Trace{Source: zone, Unit: sim.Instances, Gap: time.Hour}
		for i, c := range counts {
			tr.Steps = append(tr.Steps, sim.Step{At: time.Duration(i) * time.Hour, Count: c})
		}
		traces[sim.Key{Zone: zone, InstanceType: "p3.2xlarge"}] = tr
	}
	m, err := NewMarket("test", traces)
	require.NoError(t, err)
	return m
}

// job is 720 iterations: 10 h on 2 GPUs, 5 h on 4, restarts of 10 minutes.
func job() Job {
	return Job{Iterations: 720, CheckpointEvery: 36, MaxGPUs: 4, Restart: 10 * time.Minute, Throughput: perfectScaling{}}
}

// cycling is a 10-day market of two zones whose capacity cycles every 6 hours, each zone dry
// for part of the cycle.
func cycling(t *testing.T) *Market {
	t.Helper()
	hourly := map[string][]int{"us-east-2b": {}, "us-west-2a": {}}
	for h := 0; h < 24*10; h++ {
		hourly["us-east-2b"] = append(hourly["us-east-2b"], []int{4, 4, 2, 0, 0, 4}[h%6])
		hourly["us-west-2a"] = append(hourly["us-west-2a"], []int{0, 1, 4, 4, 2, 0}[h%6])
	}
	return steps(t, hourly)
}
