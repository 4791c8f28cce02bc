// Package fake is a model of a GPU for interference studies: an interference.Executor whose
// runs follow a fixed contention model (no kernels run). Its studies are marked simulated.
// The model's shape follows what the H200 probe measured (../shared/design/orion.md): sharing
// SMs freely lets a best-effort GEMM slow a decode chain more than tenfold, partitions (MPS
// thread limits, green contexts) trade best-effort throughput for latency, time-slicing sits
// between; the numbers are the model's, not a GPU's.
package fake

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/schooner-ml/schooner/interference"
)

// Executor models one GPU. Unavailable lists mechanisms it refuses (MIG is always refused, as
// on the machines schooner manages); Fail makes the named run fail (tests of error paths).
type Executor struct {
	Model       string
	SMs         int
	Unavailable map[interference.MechanismKind]string
	Fail        string
	// Calls counts Alone and Shared calls.
	Calls int
}

// New is an H200-like model with every mechanism but MIG.
func New() *Executor { return &Executor{Model: "NVIDIA H200 (model)", SMs: 132} }

// Base figures of each workload alone: latency (ms) or throughput (its unit), and how hard the
// best-effort side presses on the SMs (1: a GEMM that fills them).
var (
	baseLatency = map[string]float64{"decode-chain": 0.7, "prefill-gemm": 2.1, "cnn-infer": 1.4}
	baseRate    = map[string]float64{"gemm": 660, "copy": 4200, "train-step": 4.5}
	pressure    = map[string]float64{"gemm": 1, "copy": 0.45, "train-step": 0.8}
)

func (x *Executor) GPU(context.Context) (interference.GPUInfo, error) {
	return interference.GPUInfo{Model: x.Model, Driver: "model", SMs: x.SMs, Runtime: "gpu/interference/fake"}, nil
}

func (x *Executor) Available(_ context.Context, m interference.Mechanism) error {
	if m.Kind == interference.MIG {
		return errors.New("MIG is disabled on this GPU, and schooner never changes that setting")
	}
	if why, ok := x.Unavailable[m.Kind]; ok {
		return errors.New(why)
	}
	return nil
}

func (x *Executor) Simulated() bool { return true }

// Counters has none to give: a model of a GPU has no performance counters, and inventing them
// would be worse than saying so.
func (x *Executor) Counters(_ context.Context, w interference.Workload) (interference.Counters, error) {
	return interference.Counters{Workload: w.Name, Unavailable: "a model of a GPU has no performance counters"}, nil
}

func (x *Executor) Alone(_ context.Context, w interference.Workload, req interference.StudyRequest) (interference.Run, error) {
	x.Calls++
	if x.Fail == w.Name {
		return interference.Run{}, fmt.Errorf("%s failed (fake)", w.Name)
	}
	rng := x.rng(req, w.Name, "alone")
	run := interference.Run{Mechanism: interference.Mechanism{Kind: interference.Dedicated}, Repeats: 1}
	if w.Side == interference.LatencyCritical {
		run.Pair.LC = w.Name
		run.LC = latency(baseLatency[w.Name], 1, 1.3, req.Requests, rng)
	} else {
		run.Pair.BE = w.Name
		run.BE = &interference.Throughput{PerSecond: baseRate[w.Name] * jitter(rng), Unit: w.Unit}
	}
	return run, nil
}

func (x *Executor) Shared(_ context.Context, p interference.Pair, m interference.Mechanism, req interference.StudyRequest) (interference.Run, error) {
	x.Calls++
	if x.Fail == p.String() {
		return interference.Run{}, fmt.Errorf("%s failed (fake)", p)
	}
	rng := x.rng(req, p.String(), m.String())
	if m.Kind == interference.DedicatedProcess {
		// alone in a fresh process: a tenth faster than beside the executor's threads
		return interference.Run{Pair: p, Mechanism: m, Repeats: 1, LC: latency(baseLatency[p.LC], 0.9, 1.3, req.Requests, rng)}, nil
	}
	press := pressure[p.BE]
	// slow: the LC p50 factor; tail: p99 over p50; share: the BE side's throughput fraction.
	var slow, tail, share float64
	switch m.Kind {
	case interference.Sequential:
		slow, tail, share = 1+1.5*press, 1.6, 0.55
	case interference.Streams, interference.Priority:
		slow, tail, share = 1+12*press, 1.3, 0.97
		if m.Kind == interference.Priority && press < 0.5 {
			slow = 1 + 0.1*press // a memory-bound BE yields to a higher-priority stream
		}
	case interference.MPS:
		f := float64(m.Setting) / 100
		slow, tail, share = 1+12*press*f*f*f, 1.4, min(0.98, 1.2*f)
	case interference.GreenContext:
		f := float64(m.Setting) / float64(x.SMs)
		slow, tail, share = 1+0.9*press*f, 1.15, min(0.98, 1.25*f)
	case interference.TimeSlicing:
		slow, tail, share = 1+0.3*press, 3, 0.81
	default:
		return interference.Run{}, fmt.Errorf("the model has no %s", m)
	}
	return interference.Run{Pair: p, Mechanism: m, Repeats: 1,
		LC: latency(baseLatency[p.LC], slow, 1.3*tail, req.Requests, rng),
		BE: &interference.Throughput{PerSecond: baseRate[p.BE] * share * jitter(rng), Unit: unitOf(p.BE)}}, nil
}

func (x *Executor) rng(req interference.StudyRequest, a, b string) *rand.Rand {
	h := uint64(req.Seed) + uint64(x.Calls)*0x9e3779b97f4a7c15
	for _, c := range a + "|" + b {
		h = h*1099511628211 ^ uint64(c)
	}
	return rand.New(rand.NewPCG(h, 7))
}

func jitter(rng *rand.Rand) float64 { return 1 + 0.02*(rng.Float64()-0.5) }

func latency(base, slow, tail float64, n int, rng *rand.Rand) *interference.Latency {
	p50 := base * slow * jitter(rng)
	return &interference.Latency{Requests: n, P50Ms: p50, P99Ms: p50 * tail * jitter(rng), MeanMs: p50 * 1.05}
}

func unitOf(name string) string {
	w, _ := interference.WorkloadNamed(name)
	return w.Unit
}
