package interference

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/schooner-ml/schooner/interference"
)

// Executor runs workloads on one GPU. Each call is one run (after the request's warm-up); the
// study repeats calls and takes medians.
type Executor interface {
	// GPU describes the device and its software.
	GPU(ctx context.Context) (interference.GPUInfo, error)
	// Available says why the machine refuses a mechanism (nil: it does not). Probed once
	// before any run: MIG off, no MPS daemon possible, a torch without green contexts.
	Available(ctx context.Context, m interference.Mechanism) error
	// Alone runs one workload by itself (the dedicated baseline of its side).
	Alone(ctx context.Context, w interference.Workload, req interference.StudyRequest) (interference.Run, error)
	// Shared runs a pair under a mechanism.
	Shared(ctx context.Context, p interference.Pair, m interference.Mechanism, req interference.StudyRequest) (interference.Run, error)
	// Counters profiles one workload with Nsight Compute. Counters that the machine cannot give
	// (no ncu, restricted counters) come back with Unavailable set, not as an error; an error
	// means the executor failed.
	Counters(ctx context.Context, w interference.Workload) (interference.Counters, error)
	// Simulated is true for a model of a GPU (its results must never place jobs).
	Simulated() bool
}

// Progress hears of every run as it starts: done of total runs, and what. Steps kept from an
// earlier study count as done.
type Progress func(done, total int, what string)

// StudyOptions are what a study may do besides running: report progress, save itself as it
// goes, continue an earlier study.
type StudyOptions struct {
	Progress Progress
	// Checkpoint hears the study after every finished step, its missing steps listed: the
	// CLI writes it, so that a study killed at any point leaves a valid file of what was
	// measured. An error ends the study (one that cannot be saved should not run on as if
	// it were).
	Checkpoint func(interference.Study) error
	// Earlier is a study to continue (its file, partial or not): made on the same GPU model,
	// driver and workload scale with a request that measures the same way (requests, think
	// time, warm-up, repeats, seed, counters), its runs are kept and only the missing steps
	// run. Otherwise the study refuses with ErrNotContinuable, naming what differs.
	Earlier *interference.Study
	// Kept hears, before any run, how many steps of how many the earlier study gave.
	Kept func(kept, total int)
}

// RunStudy runs req on the executor's GPU: every workload of the pairs alone, then every pair
// under every available mechanism, each Repeats times, keeping the median of each figure.
// Mechanisms the machine refuses are listed with their reason and not run. A failed run ends
// the study with the error and what was measured before it.
func RunStudy(ctx context.Context, x Executor, req interference.StudyRequest, progress Progress) (interference.Study, error) {
	return RunStudyWith(ctx, x, req, StudyOptions{Progress: progress})
}

// RunStudyWith is RunStudy with its options. A failed or interrupted study (ctx ended) returns
// what was measured, its missing steps listed, with the error.
func RunStudyWith(ctx context.Context, x Executor, req interference.StudyRequest, o StudyOptions) (interference.Study, error) {
	req = req.WithDefaults()
	if err := req.Validate(); err != nil {
		return interference.Study{}, fmt.Errorf("study request: %w", err)
	}
	gpu, err := x.GPU(ctx)
	if err != nil {
		return interference.Study{}, fmt.Errorf("describing the GPU: %w", err)
	}
	s := interference.Study{Version: interference.FormatVersion, GPU: gpu, StartedAt: time.Now().UTC(), Request: req,
		Simulated: x.Simulated()}
	if o.Earlier != nil {
		if err := continuable(*o.Earlier, s); err != nil {
			return interference.Study{}, err
		}
		s.StartedAt = o.Earlier.StartedAt
	}
	mechs, refused, err := availability(ctx, x, req.Mechanisms, o.Earlier)
	if err != nil {
		return interference.Study{}, fmt.Errorf("probing the mechanisms: %w", err)
	}
	s.Unavailable = refused
	p := planOf(req, mechs)
	m := measured{runs: map[interference.Step]interference.Run{}, counters: map[interference.Step]interference.Counters{}}
	if o.Earlier != nil {
		if err := leftOut(*o.Earlier, p); err != nil {
			return interference.Study{}, err
		}
		for _, r := range o.Earlier.Runs {
			m.runs[r.Step()] = r
		}
		for _, c := range o.Earlier.Counters {
			m.counters[c.Step()] = c
		}
		if o.Kept != nil {
			o.Kept(len(m.runs)+len(m.counters), len(p.steps))
		}
	}
	total, done := 0, 0
	for _, step := range p.steps {
		total += p.units(step)
		if m.done(step) {
			done += p.units(step)
		}
	}
	// end is the study as measured so far, its finish the time of its last step.
	ran := false
	end := func() interference.Study {
		p.fill(&s, m)
		if ran || o.Earlier == nil {
			s.FinishedAt = time.Now().UTC()
		} else {
			s.FinishedAt = o.Earlier.FinishedAt
		}
		return s
	}
	for _, step := range p.steps {
		if m.done(step) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return end(), err
		}
		if err := measure(ctx, x, req, step, m, func(what string) {
			if o.Progress != nil {
				o.Progress(done, total, what)
			}
			done++
		}); err != nil {
			return end(), err
		}
		ran = true
		if o.Checkpoint != nil {
			if err := o.Checkpoint(end()); err != nil {
				return end(), fmt.Errorf("saving the study after %s: %w", step, err)
			}
		}
	}
	s = end()
	if err := s.Validate(); err != nil {
		return s, fmt.Errorf("the executor's results: %w", err)
	}
	return s, nil
}

// measure runs one step into m: a run Repeats times, keeping the medians, or a workload's
// counters. starting hears of each executor call as it starts.
func measure(ctx context.Context, x Executor, req interference.StudyRequest, step interference.Step, m measured, starting func(what string)) error {
	what := step.String()
	if step.Counters != "" {
		w, _ := interference.WorkloadNamed(step.Counters)
		starting(what)
		c, err := x.Counters(ctx, w)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		m.counters[step] = c
		return nil
	}
	runs := make([]interference.Run, 0, req.Repeats)
	for range req.Repeats {
		if err := ctx.Err(); err != nil {
			return err
		}
		starting(what)
		var r interference.Run
		var err error
		if step.Mechanism.Kind == interference.Dedicated {
			w, _ := interference.WorkloadNamed(step.Pair.LC + step.Pair.BE)
			r, err = x.Alone(ctx, w, req)
		} else { // a sharing, or a baseline in a process of its own (DedicatedProcess)
			r, err = x.Shared(ctx, step.Pair, step.Mechanism, req)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if r.Step() != step {
			// A study is keyed by its runs' steps (a resumed one keeps them by step).
			return fmt.Errorf("%s: the executor answered a run of %s", what, r.Step())
		}
		runs = append(runs, r)
	}
	m.runs[step] = median(runs)
	return nil
}

// median is the runs' median of each figure, with the last run's identity and NVML context.
func median(runs []interference.Run) interference.Run {
	out := runs[len(runs)-1]
	out.Repeats = len(runs)
	pick := func(get func(interference.Run) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = get(r)
		}
		sort.Float64s(v)
		n := len(v)
		if n%2 == 1 {
			return v[n/2]
		}
		return (v[n/2-1] + v[n/2]) / 2
	}
	if out.LC != nil {
		lc := *out.LC
		lc.P50Ms = pick(func(r interference.Run) float64 { return r.LC.P50Ms })
		lc.P99Ms = pick(func(r interference.Run) float64 { return r.LC.P99Ms })
		lc.MeanMs = pick(func(r interference.Run) float64 { return r.LC.MeanMs })
		out.LC = &lc
	}
	if out.BE != nil {
		be := *out.BE
		be.PerSecond = pick(func(r interference.Run) float64 { return r.BE.PerSecond })
		out.BE = &be
	}
	return out
}
