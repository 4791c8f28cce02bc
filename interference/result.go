package interference

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// FormatVersion is the version of the result format this build writes. A change that a reader
// of the previous version would misread bumps it (docs/interference.md). Version 2 added
// Counters; version 3 added Missing (a partial study) and gpu.scale; version 4 added gpu.uuid
// (the card). This build also reads versions 1 to 3 (versions 1 and 2 have none of them, and
// are complete).
const FormatVersion = 4

// Study is a study's results on one GPU: the file `schooner gpu interference` writes and the
// placement code reads. Results are keyed by GPU model, driver, pair and mechanism.
type Study struct {
	Version     int           `json:"version"`
	Node        string        `json:"node,omitempty"`
	GPU         GPUInfo       `json:"gpu"`
	StartedAt   time.Time     `json:"started_at"`
	FinishedAt  time.Time     `json:"finished_at"`
	Request     StudyRequest  `json:"request"`
	Runs        []Run         `json:"runs"`
	Unavailable []Unavailable `json:"unavailable,omitempty"`
	// Counters are each workload's Nsight Compute counters, when the request asked for them.
	Counters []Counters `json:"counters,omitempty"`
	// Simulated is true when the runs come from a model of a GPU, not from one (tests,
	// demonstrations): such a study must never be used for placement.
	Simulated bool `json:"simulated,omitempty"`
	// Missing are the steps of the request not measured yet, in the order they would run: a
	// study written as it goes (after every step) and interrupted is partial, and says so
	// here rather than passing for a complete one. Empty: the study is complete.
	Missing []Step `json:"missing,omitempty"`
}

// Partial is true when steps of the request are missing.
func (s Study) Partial() bool { return len(s.Missing) > 0 }

// StepsDone counts the measured steps: the runs and the workloads' counters.
func (s Study) StepsDone() int { return len(s.Runs) + len(s.Counters) }

// GPUInfo identifies the GPU and its software: results hold for this model and driver.
type GPUInfo struct {
	Model   string `json:"model"`
	Driver  string `json:"driver"`
	CUDA    string `json:"cuda,omitempty"`
	SMs     int    `json:"sms,omitempty"`
	MemMiB  int    `json:"memory_mib,omitempty"`
	Runtime string `json:"runtime,omitempty"` // e.g. "torch 2.11.0+cu130"
	// Scale is the size of the executor's workloads ("h200": the H200 probe's; "tiny": its CPU
	// test mode's), when it says: figures of two scales do not compare. Version 3.
	Scale string `json:"scale,omitempty"`
	// UUID is the card the study ran on (nvidia-smi's GPU-…), when the executor says. Two cards
	// of one model and driver sit in different hosts, and a launch-bound workload's latency is
	// mostly its host's: a CNN request took 0.22 ms alone on one H100 host and 0.56 ms on
	// another. So a study continues only on its own card. Version 4.
	UUID string `json:"uuid,omitempty"`
}

// Unavailable is a mechanism the machine refused, and why (MIG off, MPS without its daemon, a
// torch without green contexts).
type Unavailable struct {
	Mechanism Mechanism `json:"mechanism"`
	Reason    string    `json:"reason"`
}

// Run is one measurement: a pair under a mechanism, or (Dedicated) one workload alone, in which
// case only its own side is filled.
type Run struct {
	Pair      Pair        `json:"pair"`
	Mechanism Mechanism   `json:"mechanism"`
	LC        *Latency    `json:"latency_critical,omitempty"`
	BE        *Throughput `json:"best_effort,omitempty"`
	Context   NVMLContext `json:"nvml"`
	// Repeats is how many runs the figures are the median of.
	Repeats int `json:"repeats"`
}

// Latency is the latency-critical side's request latencies.
type Latency struct {
	Requests int     `json:"requests"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	MeanMs   float64 `json:"mean_ms"`
}

// Throughput is the best-effort side's work per second, in its workload's unit.
type Throughput struct {
	PerSecond float64 `json:"per_second"`
	Unit      string  `json:"unit"`
}

// NVMLContext is what NVML said while the run went: a throttled clock explains a slow run.
type NVMLContext struct {
	SMClockMHz   int     `json:"sm_clock_mhz,omitempty"`
	MemClockMHz  int     `json:"mem_clock_mhz,omitempty"`
	PowerW       float64 `json:"power_w,omitempty"`
	MemUsedMiB   int     `json:"memory_used_mib,omitempty"`
	TemperatureC int     `json:"temperature_c,omitempty"`
}

// Validate checks a study as a reader needs it: the version, the GPU named, every run's pair
// and mechanism valid with the sides its mechanism calls for and positive figures.
func (s Study) Validate() error {
	if s.Version < 1 || s.Version > FormatVersion {
		return fmt.Errorf("version %d: this build reads versions 1 to %d", s.Version, FormatVersion)
	}
	var errs []error
	if s.Version == 1 && len(s.Counters) > 0 {
		errs = append(errs, errors.New("counters in a version 1 study"))
	}
	if s.Version < 3 && len(s.Missing) > 0 {
		errs = append(errs, fmt.Errorf("missing steps in a version %d study", s.Version))
	}
	if s.Version < 3 && s.GPU.Scale != "" {
		errs = append(errs, fmt.Errorf("gpu.scale in a version %d study", s.Version))
	}
	if s.Version < 4 && s.GPU.UUID != "" {
		errs = append(errs, fmt.Errorf("gpu.uuid in a version %d study", s.Version))
	}
	errs = append(errs, s.validateMissing()...)
	for i, c := range s.Counters {
		if err := c.validate(); err != nil {
			errs = append(errs, fmt.Errorf("counters[%d] (%s): %w", i, c.Workload, err))
		}
	}
	if s.GPU.Model == "" {
		errs = append(errs, errors.New("gpu.model: empty"))
	}
	for i, r := range s.Runs {
		if err := r.validate(); err != nil {
			errs = append(errs, fmt.Errorf("runs[%d] (%s, %s): %w", i, r.Pair, r.Mechanism, err))
		}
	}
	for i, u := range s.Unavailable {
		if err := u.Mechanism.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("unavailable[%d]: %w", i, err))
		}
		if u.Reason == "" {
			errs = append(errs, fmt.Errorf("unavailable[%d]: %s without a reason", i, u.Mechanism))
		}
	}
	return errors.Join(errs...)
}

// validateMissing refuses a missing step that is not a step, is listed twice or was measured.
func (s Study) validateMissing() []error {
	done := map[Step]bool{}
	for _, r := range s.Runs {
		done[r.Step()] = true
	}
	for _, c := range s.Counters {
		done[c.Step()] = true
	}
	var errs []error
	listed := map[Step]bool{}
	for i, m := range s.Missing {
		switch err := m.validate(); {
		case err != nil:
			errs = append(errs, fmt.Errorf("missing[%d]: %w", i, err))
		case done[m]:
			errs = append(errs, fmt.Errorf("missing[%d]: %s is missing and measured", i, m))
		case listed[m]:
			errs = append(errs, fmt.Errorf("missing[%d]: %s twice", i, m))
		}
		listed[m] = true
	}
	return errs
}

func (r Run) validate() error {
	if err := r.Mechanism.Validate(); err != nil {
		return err
	}
	if r.Mechanism.Kind.Baseline() {
		// One side alone: the pair names it, the other side is empty.
		switch {
		case r.Pair.LC != "" && r.Pair.BE == "" && r.LC != nil && r.BE == nil:
			return r.LC.validate()
		case r.Pair.BE != "" && r.Pair.LC == "" && r.BE != nil && r.LC == nil && r.Mechanism.Kind == Dedicated:
			return r.BE.validate()
		}
		return errors.New("a dedicated run measures one workload: its side of the pair and its figures only")
	}
	if err := r.Pair.Validate(); err != nil {
		return err
	}
	if r.LC == nil || r.BE == nil {
		return errors.New("a shared run has both sides' figures")
	}
	if err := r.LC.validate(); err != nil {
		return err
	}
	return r.BE.validate()
}

func (l Latency) validate() error {
	if l.Requests < 1 || !(l.P50Ms > 0) || l.P99Ms < l.P50Ms {
		return fmt.Errorf("latency %+v: needs requests, p50 > 0 and p99 >= p50", l)
	}
	return nil
}

func (t Throughput) validate() error {
	if !(t.PerSecond >= 0) || t.Unit == "" {
		return fmt.Errorf("throughput %+v: needs per_second >= 0 and a unit", t)
	}
	return nil
}

// Decode reads a study, refusing unknown fields, trailing data and an invalid study.
func Decode(r io.Reader) (Study, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var s Study
	if err := dec.Decode(&s); err != nil {
		return Study{}, fmt.Errorf("reading an interference study: %w", err)
	}
	if dec.More() {
		return Study{}, errors.New("reading an interference study: more than one JSON value")
	}
	if err := s.Validate(); err != nil {
		return Study{}, fmt.Errorf("interference study: %w", err)
	}
	return s, nil
}

// ReadFile reads the study file at path (Decode's checks), naming the file in any error: the
// one way the CLI, the colocation placement and the benchmarks open a study.
func ReadFile(path string) (Study, error) {
	f, err := os.Open(path)
	if err != nil {
		return Study{}, err
	}
	defer f.Close()
	s, err := Decode(f)
	if err != nil {
		return Study{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Encode writes the study as indented JSON.
func (s Study) Encode(w io.Writer) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}
