package serve

import (
	"errors"
	"fmt"
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/bridge"
)

// Request is what to plan for.
type Request struct {
	// Model is the decoder to serve, as the training planner describes it.
	Model planner.Architecture
	// Network gives the links between GPUs (nil: planner.DefaultNetwork()).
	Network *planner.Network
	// Rate is the mean arrival rate in requests per second (Poisson arrivals).
	Rate float64
	// PromptTokens and OutputTokens are every request's prompt and generated lengths.
	PromptTokens, OutputTokens int
	// Targets are the p99 latency targets; zero fields take the defaults.
	Targets Targets
	// Offerings are the instances that can be bought.
	Offerings []cloud.Offering
	// AllowSpot lets pools run on spot capacity; otherwise everything is on demand.
	AllowSpot bool
	// AssumeInstances is how many instances of an offering are assumed obtainable where the
	// provider gives no spot capacity hint, and of every on-demand offering (0: the training
	// planner's bridge.DefaultAssumeInstances, so both plan on the same offerings alike).
	AssumeInstances int
	// MaxGPUs caps the GPUs bought in all (0: DefaultMaxGPUs).
	MaxGPUs int
	// Top is how many configurations to return (0: DefaultTop).
	Top int
	// Seed seeds the simulation's arrivals; SimRequests is how many requests it runs (0:
	// enough for a few lifetimes of a request, at least DefaultSimRequests).
	Seed        uint64
	SimRequests int
	// Assumptions are the cost model's constants; zero fields take the defaults.
	Assumptions Assumptions
}

// Targets are p99 latency targets: time to the first token, and a request's mean time per
// output token after the first.
type Targets struct {
	TTFT time.Duration `json:"ttft_ns"`
	TPOT time.Duration `json:"tpot_ns"`
}

// Defaults. The latency targets are interactive-chat service levels of the kind DistServe
// evaluates (TTFT 0.25–2.5 s, TPOT 0.1–0.15 s): the loose end of TTFT, the tight end of TPOT,
// which is about as fast as people read.
const (
	DefaultTTFT        = 2 * time.Second
	DefaultTPOT        = 100 * time.Millisecond
	DefaultMaxGPUs     = 64
	DefaultTop         = 3
	DefaultSimRequests = 3000
)

// withDefaults fills the zero fields.
func (r Request) withDefaults() Request {
	if r.Targets.TTFT <= 0 {
		r.Targets.TTFT = DefaultTTFT
	}
	if r.Targets.TPOT <= 0 {
		r.Targets.TPOT = DefaultTPOT
	}
	if r.MaxGPUs <= 0 {
		r.MaxGPUs = DefaultMaxGPUs
	}
	if r.Top <= 0 {
		r.Top = DefaultTop
	}
	if r.AssumeInstances <= 0 {
		r.AssumeInstances = bridge.DefaultAssumeInstances
	}
	if r.Network == nil {
		r.Network = planner.DefaultNetwork()
	}
	r.Assumptions = r.Assumptions.withDefaults()
	return r
}

// validate names every bad field.
func (r Request) validate() error {
	var errs []error
	if err := r.Model.Validate(); err != nil {
		errs = append(errs, err)
	}
	if !(r.Rate > 0) {
		errs = append(errs, fmt.Errorf("rate must be positive, got %g requests/s", r.Rate))
	}
	if r.PromptTokens <= 0 {
		errs = append(errs, fmt.Errorf("prompt tokens must be positive, got %d", r.PromptTokens))
	}
	if r.OutputTokens <= 0 {
		errs = append(errs, fmt.Errorf("output tokens must be positive, got %d", r.OutputTokens))
	}
	if !r.Model.Rotary && r.Model.SeqLen > 0 && r.PromptTokens+r.OutputTokens > r.Model.SeqLen {
		errs = append(errs, fmt.Errorf("prompt and output tokens (%d) exceed the model's %d learned positions",
			r.PromptTokens+r.OutputTokens, r.Model.SeqLen))
	}
	if len(r.Offerings) == 0 {
		errs = append(errs, errors.New("no offerings"))
	}
	return errors.Join(errs...)
}
