package serve

import (
	"fmt"
	"time"
)

// NoFitError says the model fits no configuration of the offered GPUs within the GPU cap.
type NoFitError struct {
	Model string
	// WeightBytes is the model's weights; LargestGPUBytes the memory of the largest GPU on
	// offer; MaxGPUs the cap.
	WeightBytes, LargestGPUBytes float64
	MaxGPUs                      int
}

func (e *NoFitError) Error() string {
	return fmt.Sprintf("no offering fits %s: its weights take %.1f GiB, the largest GPU on offer has %.1f GiB, "+
		"and no pipeline of at most %d GPUs holds the weights and one request's KV cache",
		e.Model, e.WeightBytes/gib, e.LargestGPUBytes/gib, e.MaxGPUs)
}

// Unreachable targets.
const (
	TargetTTFT     = "ttft"
	TargetTPOT     = "tpot"
	TargetRate     = "rate"
	TargetCapacity = "capacity"
	// TargetBoth: each target was met by some simulated configuration, none met both.
	TargetBoth = "ttft+tpot"
)

// UnreachableError says no configuration meets a target: which one, what was asked and the
// best any configuration achieved (seconds for the latencies, requests/s for the rate).
type UnreachableError struct {
	Target string
	Want   float64
	Best   float64
	// Simulated is true when the best was a simulation's p99, false when it is the cost
	// model's floor (a request alone on an idle replica).
	Simulated bool
	MaxGPUs   int
	// WantTPOT and BestTPOT are the TPOT's, for TargetBoth (Want and Best are the TTFT's).
	WantTPOT, BestTPOT float64
}

func (e *UnreachableError) Error() string {
	switch e.Target {
	case TargetRate:
		return fmt.Sprintf("the rate %.3g requests/s is out of reach within %d GPUs: the most any configuration sustains there is about %.3g requests/s",
			e.Want, e.MaxGPUs, e.Best)
	case TargetBoth:
		return fmt.Sprintf("no configuration met the TTFT target %s and the TPOT target %s together in simulation "+
			"(the best p99s seen: TTFT %s, TPOT %s, within %d GPUs)", secs(e.Want), secs(e.WantTPOT), secs(e.Best), secs(e.BestTPOT), e.MaxGPUs)
	case TargetCapacity:
		return fmt.Sprintf("configurations meet the targets but the offerings lack the instances to buy them (within %d GPUs): allow spot, more zones or more instances", e.MaxGPUs)
	}
	how := "on an idle replica, the cost model's floor"
	if e.Simulated {
		how = "p99 in simulation of the best configurations"
	}
	return fmt.Sprintf("the %s target %s is out of reach: the best achievable is %s (%s)",
		e.Target, secs(e.Want), secs(e.Best), how)
}

const gib = 1 << 30

func secs(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if d < time.Millisecond {
		return d.String() // a target under a millisecond is shown as given, not rounded to 0s
	}
	return d.Round(10 * time.Microsecond).String()
}
