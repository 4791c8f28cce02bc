package interference

import (
	"fmt"
	"strings"
)

// Side is which half of a pair a workload plays.
type Side string

// A latency-critical workload is timed per request (p50/p99 against alone); a best-effort one
// by its throughput (against alone).
const (
	LatencyCritical Side = "latency-critical"
	BestEffort      Side = "best-effort"
)

// Workload names a workload the runner knows how to run, and its side.
type Workload struct {
	Name string `json:"name"`
	Side Side   `json:"side"`
	// Unit is what the best-effort side's throughput counts ("TFLOP/s", "GB/s", "steps/s").
	Unit string `json:"unit,omitempty"`
}

// The workloads of the study (issue: a decode step chain of the serving model, a prefill GEMM,
// a CNN inference request, against a large GEMM, a memory-bound copy, a training step).
var (
	DecodeChain = Workload{Name: "decode-chain", Side: LatencyCritical}
	PrefillGEMM = Workload{Name: "prefill-gemm", Side: LatencyCritical}
	CNNInfer    = Workload{Name: "cnn-infer", Side: LatencyCritical}
	LargeGEMM   = Workload{Name: "gemm", Side: BestEffort, Unit: "TFLOP/s"}
	MemCopy     = Workload{Name: "copy", Side: BestEffort, Unit: "GB/s"}
	TrainStep   = Workload{Name: "train-step", Side: BestEffort, Unit: "steps/s"}
)

// Workloads lists the known workloads.
var Workloads = []Workload{DecodeChain, PrefillGEMM, CNNInfer, LargeGEMM, MemCopy, TrainStep}

// WorkloadNamed is the known workload of that name.
func WorkloadNamed(name string) (Workload, error) {
	for _, w := range Workloads {
		if w.Name == name {
			return w, nil
		}
	}
	return Workload{}, fmt.Errorf("workload %q is not one of the known ones (%s)", name, workloadNames())
}

func workloadNames() string {
	names := make([]string, len(Workloads))
	for i, w := range Workloads {
		names[i] = w.Name
	}
	return strings.Join(names, ", ")
}

// Pair is a latency-critical workload sharing the GPU with a best-effort one.
type Pair struct {
	LC string `json:"latency_critical"`
	BE string `json:"best_effort"`
}

func (p Pair) String() string { return p.LC + " + " + p.BE }

// Validate checks that both are known and on their sides.
func (p Pair) Validate() error {
	lc, err := WorkloadNamed(p.LC)
	if err != nil {
		return err
	}
	be, err := WorkloadNamed(p.BE)
	if err != nil {
		return err
	}
	if lc.Side != LatencyCritical {
		return fmt.Errorf("pair %s: %s is %s, not latency-critical", p, p.LC, lc.Side)
	}
	if be.Side != BestEffort {
		return fmt.Errorf("pair %s: %s is %s, not best-effort", p, p.BE, be.Side)
	}
	return nil
}
