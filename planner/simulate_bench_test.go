package planner

import (
	"fmt"
	"testing"

	"github.com/schooner-ml/schooner/gpu"
)

// benchModel is shaped like OPT-350 (26 layers) with A100 and V100 profiles at TP 1 and 2.
func benchModel() *ModelProfile {
	m := toyModel(26, 1.26e7, 9e7, 2.1e6)
	for _, tp := range []int{1, 2} {
		for _, mbs := range []int{1, 2, 4} {
			withCompute(m, gpu.A100_40, tp, mbs, a100Time)
			withCompute(m, gpu.V100, tp, mbs, v100Time)
		}
	}
	return m
}

// benchPlan has p stages of d replicas, the stages alternating between A100 in one zone and
// V100 in another, with an uneven split.
func benchPlan(stages, d int, mixedDP bool) *Plan {
	pl := &Plan{Model: "toy", GlobalBatch: 512, MicroBatch: 1}
	per := 26 / stages
	first := 0
	for i := 0; i < stages; i++ {
		last := first + per - 1
		if i == stages-1 {
			last = 25
		}
		st := Stage{FirstLayer: first, LastLayer: last}
		for j := 0; j < d; j++ {
			r := replica(gpu.A100_40, 1, "us-central1-a", 3.67)
			if i%2 == 1 || (mixedDP && j%2 == 1) {
				r = replica(gpu.V100, 2, "us-central1-b", 2.55)
			}
			st.Replicas = append(st.Replicas, r)
		}
		pl.Stages = append(pl.Stages, st)
		first = last + 1
	}
	return pl
}

func BenchmarkSimulate(b *testing.B) {
	m := benchModel()
	s := NewSim(m, flatNet(flatLink(2.5, 1e-5)))
	for _, c := range []struct {
		stages, d int
		mixed     bool
	}{{2, 2, false}, {4, 4, false}, {4, 4, true}, {8, 16, false}, {8, 16, true}} {
		name := fmt.Sprintf("P%d_D%d", c.stages, c.d)
		if c.mixed {
			name += "_mixedDP"
		}
		p := benchPlan(c.stages, c.d, c.mixed)
		if _, err := s.Simulate(p); err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Simulate(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkStageCompute(b *testing.B) {
	s := NewSim(benchModel(), nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := s.StageCompute(gpu.A100_40, 2, 4, 3, 17); !ok {
			b.Fatal("not profiled")
		}
	}
}

func BenchmarkNewSim(b *testing.B) {
	m := benchModel()
	n := flatNet(flatLink(2.5, 1e-5))
	b.ReportAllocs()
	for b.Loop() {
		NewSim(m, n)
	}
}

// BenchmarkSimulateDefaultNetwork uses the built-in network, whose links differ by GPU type
// and zone, so Network.Between does real work.
func BenchmarkSimulateDefaultNetwork(b *testing.B) {
	s := NewSim(benchModel(), DefaultNetwork())
	for _, c := range []struct {
		stages, d int
		mixed     bool
	}{{2, 2, false}, {4, 4, true}, {8, 16, true}} {
		name := fmt.Sprintf("P%d_D%d", c.stages, c.d)
		if c.mixed {
			name += "_mixedDP"
		}
		p := benchPlan(c.stages, c.d, c.mixed)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Simulate(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
