package interference

import (
	"errors"
	"fmt"
)

// Step is one measurement of a study: a workload alone (Mechanism dedicated, the pair naming
// only its side, as in its Run), a pair under a mechanism, or (Counters, the workload's name)
// one workload's Nsight Compute counters. A study interrupted before its end lists the steps
// it lacks (Study.Missing), so that a reader knows it is partial and a resumed study knows
// what is left to run.
type Step struct {
	Pair      Pair      `json:"pair,omitzero"`
	Mechanism Mechanism `json:"mechanism,omitzero"`
	Counters  string    `json:"counters,omitempty"`
}

// Step is the run's place in its study.
func (r Run) Step() Step { return Step{Pair: r.Pair, Mechanism: r.Mechanism} }

// Step is the counters' place in their study.
func (c Counters) Step() Step { return Step{Counters: c.Workload} }

// String names the step as a study's progress does: "decode-chain alone",
// "decode-chain + gemm under mps-50", "gemm counters".
func (s Step) String() string {
	switch {
	case s.Counters != "":
		return s.Counters + " counters"
	case s.Mechanism.Kind == Dedicated:
		return s.Pair.LC + s.Pair.BE + " alone"
	case s.Mechanism.Kind == DedicatedProcess:
		return s.Pair.LC + " alone in a process of its own"
	}
	return fmt.Sprintf("%s under %s", s.Pair, s.Mechanism)
}

func (s Step) validate() error {
	if s.Counters != "" {
		if s.Pair != (Pair{}) || s.Mechanism != (Mechanism{}) {
			return errors.New("a counters step names its workload only")
		}
		_, err := WorkloadNamed(s.Counters)
		return err
	}
	if err := s.Mechanism.Validate(); err != nil {
		return err
	}
	if !s.Mechanism.Kind.Baseline() {
		return s.Pair.Validate()
	}
	name := s.Pair.LC + s.Pair.BE
	if (s.Pair.LC == "") == (s.Pair.BE == "") {
		return errors.New("a dedicated step names one workload: its side of the pair")
	}
	if s.Mechanism.Kind == DedicatedProcess && s.Pair.LC == "" {
		return errors.New("a dedicated-process step is of a latency-critical workload")
	}
	w, err := WorkloadNamed(name)
	if err != nil {
		return err
	}
	if (w.Side == LatencyCritical) != (s.Pair.LC != "") {
		return fmt.Errorf("%s is %s: it goes on that side of the pair", name, w.Side)
	}
	return nil
}
