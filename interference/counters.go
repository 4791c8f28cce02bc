package interference

import (
	"errors"
	"fmt"
)

// Counters are a workload's Nsight Compute counters (a study run with Counters set): what it asks
// of the GPU's units, each metric averaged over the profiled kernels weighted by their
// durations. They explain a slowdown (two workloads that both saturate DRAM fight over it)
// where the timings only show it. Unavailable says why there are none: ncu is missing, the
// performance counters are restricted, a model of a GPU has none.
type Counters struct {
	Workload    string             `json:"workload"`
	Tool        string             `json:"tool,omitempty"` // e.g. "ncu Version 2025.3.0.0"
	Kernels     int                `json:"kernels,omitempty"`
	DurationMs  float64            `json:"duration_ms,omitempty"`
	Metrics     map[string]float64 `json:"metrics,omitempty"`
	Unavailable string             `json:"unavailable,omitempty"`
}

// CounterMetrics are the metrics the executor reports, by the names in Counters.Metrics: SM and
// memory throughput against their peaks, DRAM throughput, L1 and L2 hit rates and achieved
// occupancy, all in percent (docs/interference.md says which ncu metric each is).
var CounterMetrics = []string{"sm_throughput_pct", "memory_throughput_pct", "dram_throughput_pct",
	"l1_hit_rate_pct", "l2_hit_rate_pct", "achieved_occupancy_pct"}

func (c Counters) validate() error {
	if _, err := WorkloadNamed(c.Workload); err != nil {
		return err
	}
	if c.Unavailable != "" {
		if c.Kernels != 0 || len(c.Metrics) != 0 {
			return errors.New("counters both measured and unavailable")
		}
		return nil
	}
	if c.Kernels < 1 {
		return errors.New("no kernel profiled and no reason given")
	}
	// In CounterMetrics' order, never the map's: this runs inside workflows (a colocation's
	// input carries a study), where the first error named must be the same on every replay.
	known := 0
	for _, k := range CounterMetrics {
		v, ok := c.Metrics[k]
		if !ok {
			continue
		}
		known++
		if !(v >= 0 && v <= 100) {
			return fmt.Errorf("metric %s = %v: a percentage is between 0 and 100", k, v)
		}
	}
	if known != len(c.Metrics) {
		return fmt.Errorf("%d metrics this format does not name (it names %v)", len(c.Metrics)-known, CounterMetrics)
	}
	return nil
}
