package interference

import (
	"fmt"
	"strconv"
	"strings"
)

// MechanismKind is a way two workloads share one GPU.
type MechanismKind string

// The mechanisms a study can probe. Dedicated is each workload alone: the baseline every other
// run is compared with. DedicatedProcess is a latency-critical workload alone in a child process
// of its own, as MPS runs it: the baseline of the MPS rows, since a launch-bound workload runs
// differently in a fresh process than beside the executor's threads (the CNN request's MPS rows
// came out below 1.0x against the in-process baseline). Neither is requested: a study measures
// them for the mechanisms it probes.
const (
	Dedicated        MechanismKind = "dedicated"         // each workload alone on the GPU
	DedicatedProcess MechanismKind = "dedicated-process" // a latency-critical workload alone, in a child process
	Sequential       MechanismKind = "sequential"        // one process, the two workloads' kernels in turn
	Streams          MechanismKind = "streams"           // one process, two CUDA streams at equal priority
	Priority         MechanismKind = "priority"          // one process, the latency-critical stream at higher priority
	MPS              MechanismKind = "mps"               // two processes under MPS; Setting: the best-effort side's active thread %
	GreenContext     MechanismKind = "green-context"     // one process, the best-effort side on Setting SMs
	TimeSlicing      MechanismKind = "time-slicing"      // two processes, the driver's time slices
	MIG              MechanismKind = "mig"               // MIG instances (never enabled by schooner: reported unavailable when off)
)

// Kinds lists every mechanism kind in report order.
var Kinds = []MechanismKind{Dedicated, DedicatedProcess, Sequential, Streams, Priority, MPS, GreenContext, TimeSlicing, MIG}

// Baseline reports whether k measures one workload alone (a baseline, not a sharing).
func (k MechanismKind) Baseline() bool { return k == Dedicated || k == DedicatedProcess }

// LCInChild reports whether the mechanism runs the latency-critical side in a child process
// of its own (MPS), whose slowdowns are against the DedicatedProcess baseline.
func (m Mechanism) LCInChild() bool { return m.Kind == MPS }

// Mechanism is one sharing mechanism with its setting: MPS's active thread percentage of the
// best-effort side (1..100), a green context's SM count (> 0); zero for the others.
type Mechanism struct {
	Kind    MechanismKind `json:"kind"`
	Setting int           `json:"setting,omitempty"`
}

// String is the mechanism as tables and the CLI name it: "mps-50", "green-context-66", "streams".
func (m Mechanism) String() string {
	if m.Setting == 0 {
		return string(m.Kind)
	}
	return string(m.Kind) + "-" + strconv.Itoa(m.Setting)
}

// Validate refuses an unknown kind and a setting the kind does not take or needs.
func (m Mechanism) Validate() error {
	switch m.Kind {
	case MPS:
		if m.Setting < 1 || m.Setting > 100 {
			return fmt.Errorf("mechanism %s: setting is the best-effort side's active thread percentage, 1 to 100", m)
		}
	case GreenContext:
		if m.Setting < 1 {
			return fmt.Errorf("mechanism %s: setting is the best-effort side's SM count, at least 1", m)
		}
	case Dedicated, DedicatedProcess, Sequential, Streams, Priority, TimeSlicing, MIG:
		if m.Setting != 0 {
			return fmt.Errorf("mechanism %s: %s takes no setting", m, m.Kind)
		}
	default:
		return fmt.Errorf("mechanism kind %q is not one of %v", m.Kind, Kinds)
	}
	return nil
}

// ParseMechanism reads the String form back ("mps-50", "green-context-66", "streams").
func ParseMechanism(s string) (Mechanism, error) {
	for _, k := range Kinds {
		if s == string(k) {
			m := Mechanism{Kind: k}
			return m, m.Validate()
		}
		if rest, ok := strings.CutPrefix(s, string(k)+"-"); ok && rest != "" {
			n, err := strconv.Atoi(rest)
			if err != nil {
				return Mechanism{}, fmt.Errorf("mechanism %q: %q is not a number", s, rest)
			}
			m := Mechanism{Kind: k, Setting: n}
			return m, m.Validate()
		}
	}
	return Mechanism{}, fmt.Errorf("mechanism %q: the kind is not one of %v", s, Kinds)
}
