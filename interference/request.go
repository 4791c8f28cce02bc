package interference

import (
	"errors"
	"fmt"
)

// StudyRequest is what a study runs on a node: every pair under every mechanism, each workload
// alone first. The latency-critical side sends Requests requests with exponential think times
// of mean ThinkMs milliseconds between them (Poisson arrivals); the best-effort side runs back to back
// for the same span. Each run is repeated Repeats times after Warmup requests; the report
// takes the median run.
type StudyRequest struct {
	Pairs      []Pair      `json:"pairs"`
	Mechanisms []Mechanism `json:"mechanisms"`
	Requests   int         `json:"requests"`
	ThinkMs    float64     `json:"think_ms"`
	Warmup     int         `json:"warmup"`
	Repeats    int         `json:"repeats"`
	Seed       int64       `json:"seed"`
	// Counters asks for each workload's Nsight Compute counters too (where ncu works; each
	// workload's profile takes a while: ncu replays every kernel several times).
	Counters bool `json:"counters,omitempty"`
}

// Limits on a study's size: a study holds a GPU for its whole length.
const (
	MaxRequests = 100000
	MaxRepeats  = 50
)

// DefaultStudy is every latency-critical workload against every best-effort one, under every
// mechanism but MIG (which is off on the machines schooner manages, and reported so), with
// MPS at 100/50/25% and green contexts at a half and a quarter of an H200's 132 SMs.
func DefaultStudy() StudyRequest {
	var pairs []Pair
	for _, lc := range Workloads {
		for _, be := range Workloads {
			if lc.Side == LatencyCritical && be.Side == BestEffort {
				pairs = append(pairs, Pair{LC: lc.Name, BE: be.Name})
			}
		}
	}
	return StudyRequest{Pairs: pairs, Mechanisms: []Mechanism{
		{Kind: Sequential}, {Kind: Streams}, {Kind: Priority},
		{Kind: MPS, Setting: 100}, {Kind: MPS, Setting: 50}, {Kind: MPS, Setting: 25},
		{Kind: GreenContext, Setting: 66}, {Kind: GreenContext, Setting: 33},
		{Kind: TimeSlicing}, {Kind: MIG},
	}}.WithDefaults()
}

// WithDefaults fills what is left out: 200 requests, 2 ms think time, 20 warm-up requests,
// 3 repeats.
func (r StudyRequest) WithDefaults() StudyRequest {
	if r.Requests == 0 {
		r.Requests = 200
	}
	if r.ThinkMs == 0 {
		r.ThinkMs = 2
	}
	if r.Warmup == 0 {
		r.Warmup = 20
	}
	if r.Repeats == 0 {
		r.Repeats = 3
	}
	return r
}

// Validate names the first field that is wrong. Dedicated is implied (every study measures each
// workload alone) and is refused in the list so that no run is counted twice.
func (r StudyRequest) Validate() error {
	errs := validateList("pairs", r.Pairs, Pair.Validate)
	errs = append(errs, validateList("mechanisms", r.Mechanisms, func(m Mechanism) error {
		if err := m.Validate(); err != nil {
			return err
		}
		switch m.Kind {
		case Dedicated:
			return errors.New("dedicated is always measured; leave it out")
		case DedicatedProcess:
			return errors.New("dedicated-process is measured whenever MPS is; leave it out")
		}
		return nil
	})...)
	switch {
	case r.Requests < 10 || r.Requests > MaxRequests:
		errs = append(errs, fmt.Errorf("requests: %d is not in [10, %d] (a p99 needs at least 10)", r.Requests, MaxRequests))
	case !(r.ThinkMs >= 0 && r.ThinkMs <= 1000):
		errs = append(errs, fmt.Errorf("think_ms: %g is not in [0, 1000]", r.ThinkMs))
	case r.Warmup < 0 || r.Warmup > r.Requests:
		errs = append(errs, fmt.Errorf("warmup: %d is not in [0, requests]", r.Warmup))
	case r.Repeats < 1 || r.Repeats > MaxRepeats:
		errs = append(errs, fmt.Errorf("repeats: %d is not in [1, %d]", r.Repeats, MaxRepeats))
	}
	return errors.Join(errs...)
}

// validateList names what is wrong with the list field of items: empty, an item that validate
// refuses, an item given twice.
func validateList[T interface {
	comparable
	fmt.Stringer
}](field string, items []T, validate func(T) error) []error {
	var errs []error
	if len(items) == 0 {
		errs = append(errs, fmt.Errorf("%s: at least one", field))
	}
	seen := map[T]bool{}
	for i, it := range items {
		if err := validate(it); err != nil {
			errs = append(errs, fmt.Errorf("%s[%d]: %w", field, i, err))
		}
		if seen[it] {
			errs = append(errs, fmt.Errorf("%s[%d]: %s twice", field, i, it))
		}
		seen[it] = true
	}
	return errs
}
