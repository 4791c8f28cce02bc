package simgpu

import (
	"errors"
	"fmt"
	"time"

	"github.com/schooner-ml/schooner/colocation"
)

// Mechanism is how the simulated pair shares the GPU.
type Mechanism string

// The mechanisms the simulation compares. Dedicated runs each side alone (the baseline);
// Streams and Priority launch both freely on two streams (equal, or HP higher); Schooner is
// Priority plus the admission rule and the Supervisor.
const (
	Dedicated Mechanism = "dedicated"
	Streams   Mechanism = "streams"
	Priority  Mechanism = "priority"
	Schooner  Mechanism = "schooner"
)

// Mechanisms lists them in report order.
var Mechanisms = []Mechanism{Dedicated, Streams, Priority, Schooner}

// Scenario is one simulated colocation: an HP side serving requests with Poisson arrivals, each
// a chain of kernels launched at arrival, beside a BE side that launches its kernel loop as
// fast as it is let.
type Scenario struct {
	SMs      int
	HP       []Kernel      // one request's kernels, in order
	Arrival  time.Duration // mean time between HP requests (Poisson)
	BE       []Kernel      // the BE loop's kernels, repeated
	BEDepth  int           // kernels the BE side keeps queued when nothing gates it
	Launch   time.Duration // host time to launch one kernel
	Poll     time.Duration // how late a shim notices a completion
	Duration time.Duration // simulated time
	Seed     uint64
	Params   colocation.Params
}

// H200Probe is the pair of the H200 probe (docs/colocation.md): HP requests of 16 memory-bound
// GEMMs of 45 µs on all 132 SMs every 2.7 ms on average, beside a loop of persistent
// compute-bound GEMMs of beKernel each (1.6 ms unsplit; the splitter cuts them smaller).
func H200Probe(beKernel time.Duration) Scenario {
	hp := make([]Kernel, 16)
	for i := range hp {
		hp[i] = Kernel{Name: "hp-gemm-32x8192", Blocks: 132, BlockTime: 45 * time.Microsecond, Bound: colocation.Memory}
	}
	return Scenario{
		SMs:      132,
		HP:       hp,
		Arrival:  2700 * time.Microsecond,
		BE:       []Kernel{{Name: "be-gemm", Blocks: 132, BlockTime: beKernel, Bound: colocation.Compute}},
		BEDepth:  4,
		Launch:   5 * time.Microsecond,
		Poll:     5 * time.Microsecond,
		Duration: time.Second,
		Seed:     1,
		Params:   colocation.DefaultParams(),
	}
}

// Validate refuses a scenario that cannot run.
func (s Scenario) Validate() error {
	var errs []error
	if s.SMs < 1 {
		errs = append(errs, fmt.Errorf("sms %d: at least 1", s.SMs))
	}
	if len(s.HP) == 0 || len(s.BE) == 0 {
		errs = append(errs, errors.New("both sides need at least one kernel"))
	}
	for _, k := range append(append([]Kernel{}, s.HP...), s.BE...) {
		if k.Blocks < 1 || k.BlockTime <= 0 {
			errs = append(errs, fmt.Errorf("kernel %q: blocks and block time must be positive", k.Name))
		}
	}
	if s.Arrival <= 0 || s.Duration <= 0 || s.Launch < 0 || s.Poll <= 0 || s.BEDepth < 1 {
		errs = append(errs, errors.New("arrival, duration and poll must be positive, launch not negative, BE depth at least 1"))
	}
	if err := s.Params.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
