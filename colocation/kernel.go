package colocation

import "fmt"

// Bound is which resource limits a kernel: the admission rule lets a BE kernel run beside busy
// HP work only when their bounds differ (a compute-bound GEMM beside a memory-bound decode).
type Bound int

// The bounds. Unknown is a kernel not yet profiled: it never counts as complementary.
const (
	Unknown Bound = iota
	Compute
	Memory
)

// String names the bound as profiles and tables write it.
func (b Bound) String() string {
	switch b {
	case Compute:
		return "compute"
	case Memory:
		return "memory"
	default:
		return "unknown"
	}
}

// ParseBound reads String's form back.
func ParseBound(s string) (Bound, error) {
	switch s {
	case "compute":
		return Compute, nil
	case "memory":
		return Memory, nil
	case "unknown", "":
		return Unknown, nil
	}
	return Unknown, fmt.Errorf("kernel bound %q is not compute, memory or unknown", s)
}

// Kernel is what the runtime knows of one kernel launch when it decides: its profiled
// duration alone on the GPU, how many SMs its grid occupies (from the occupancy API at launch,
// capped at the device's SM count) and its bound. Profiles are keyed by kernel function and
// launch shape (grid, block, shared memory), never by position in the program.
type Kernel struct {
	DurationNanos int64
	SMs           int
	Bound         Bound
}
