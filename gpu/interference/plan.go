package interference

import (
	"slices"

	"github.com/schooner-ml/schooner/interference"
)

// plan is a study's steps in the order they run: every workload of the pairs alone (the
// baselines every slowdown needs, so they come first; when a mechanism runs the latency-critical
// side in a child process, each latency-critical workload alone in one too), every pair under
// every available mechanism, then, when asked, each workload's counters. A study, whole or
// partial, lists its runs in this order, so that a resumed study is the file one uninterrupted
// run would write.
type plan struct {
	steps   []interference.Step
	repeats int
}

func planOf(req interference.StudyRequest, available []interference.Mechanism) plan {
	var alone []string
	seen := map[string]bool{}
	for _, p := range req.Pairs {
		for _, name := range []string{p.LC, p.BE} {
			if !seen[name] {
				seen[name] = true
				alone = append(alone, name)
			}
		}
	}
	p := plan{repeats: req.Repeats}
	dedicated := interference.Mechanism{Kind: interference.Dedicated}
	for _, name := range alone {
		w, _ := interference.WorkloadNamed(name) // the request is validated first
		pair := interference.Pair{LC: name}
		if w.Side == interference.BestEffort {
			pair = interference.Pair{BE: name}
		}
		p.steps = append(p.steps, interference.Step{Pair: pair, Mechanism: dedicated})
	}
	if slices.ContainsFunc(available, interference.Mechanism.LCInChild) {
		inChild := interference.Mechanism{Kind: interference.DedicatedProcess}
		for _, name := range alone {
			if w, _ := interference.WorkloadNamed(name); w.Side == interference.LatencyCritical {
				p.steps = append(p.steps, interference.Step{Pair: interference.Pair{LC: name}, Mechanism: inChild})
			}
		}
	}
	for _, pair := range req.Pairs {
		for _, m := range available {
			p.steps = append(p.steps, interference.Step{Pair: pair, Mechanism: m})
		}
	}
	if req.Counters {
		for _, name := range alone {
			p.steps = append(p.steps, interference.Step{Counters: name})
		}
	}
	return p
}

// units is how many executor calls a step takes: a run is repeated, counters are one profile.
// Progress counts these, since a step of three repeats takes three times as long.
func (p plan) units(s interference.Step) int {
	if s.Counters != "" {
		return 1
	}
	return p.repeats
}

// has is true when s is one of the plan's steps.
func (p plan) has(s interference.Step) bool {
	for _, t := range p.steps {
		if t == s {
			return true
		}
	}
	return false
}

// measured are a study's results by step, whichever run made them.
type measured struct {
	runs     map[interference.Step]interference.Run
	counters map[interference.Step]interference.Counters
}

func (m measured) done(s interference.Step) bool {
	_, run := m.runs[s]
	_, c := m.counters[s]
	return run || c
}

// fill sets the study's runs, counters and missing steps from what is measured, in the plan's
// order.
func (p plan) fill(s *interference.Study, m measured) {
	s.Runs, s.Counters, s.Missing = nil, nil, nil
	for _, step := range p.steps {
		if r, ok := m.runs[step]; ok {
			s.Runs = append(s.Runs, r)
		} else if c, ok := m.counters[step]; ok {
			s.Counters = append(s.Counters, c)
		} else {
			s.Missing = append(s.Missing, step)
		}
	}
	if s.Runs == nil {
		s.Runs = []interference.Run{} // "runs": [] in the file, never null
	}
}
