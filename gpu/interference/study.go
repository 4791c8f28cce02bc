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

// Progress hears of every run as it starts: done of total runs, and what.
type Progress func(done, total int, what string)

// RunStudy runs req on the executor's GPU: every workload of the pairs alone, then every pair
// under every available mechanism, each Repeats times, keeping the median of each figure.
// Mechanisms the machine refuses are listed with their reason and not run. A failed run ends
// the study with the error and what was measured before it.
func RunStudy(ctx context.Context, x Executor, req interference.StudyRequest, progress Progress) (interference.Study, error) {
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
	var mechs []interference.Mechanism
	for _, m := range req.Mechanisms {
		if err := x.Available(ctx, m); err != nil {
			s.Unavailable = append(s.Unavailable, interference.Unavailable{Mechanism: m, Reason: err.Error()})
			continue
		}
		mechs = append(mechs, m)
	}
	var alone []interference.Workload
	seen := map[string]bool{}
	for _, p := range req.Pairs {
		for _, name := range []string{p.LC, p.BE} {
			if !seen[name] {
				seen[name] = true
				w, _ := interference.WorkloadNamed(name) // validated above
				alone = append(alone, w)
			}
		}
	}
	total := (len(alone) + len(req.Pairs)*len(mechs)) * req.Repeats
	if req.Counters {
		total += len(alone)
	}
	done := 0
	repeat := func(what string, run func() (interference.Run, error)) error {
		runs := make([]interference.Run, 0, req.Repeats)
		for range req.Repeats {
			if err := ctx.Err(); err != nil {
				return err
			}
			if progress != nil {
				progress(done, total, what)
			}
			r, err := run()
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			runs = append(runs, r)
			done++
		}
		s.Runs = append(s.Runs, median(runs))
		return nil
	}
	for _, w := range alone {
		if err := repeat(w.Name+" alone", func() (interference.Run, error) { return x.Alone(ctx, w, req) }); err != nil {
			return finish(s), err
		}
	}
	for _, p := range req.Pairs {
		for _, m := range mechs {
			if err := repeat(fmt.Sprintf("%s under %s", p, m), func() (interference.Run, error) { return x.Shared(ctx, p, m, req) }); err != nil {
				return finish(s), err
			}
		}
	}
	if req.Counters {
		for _, w := range alone {
			if progress != nil {
				progress(done, total, w.Name+" counters")
			}
			c, err := x.Counters(ctx, w)
			if err != nil {
				return finish(s), fmt.Errorf("%s counters: %w", w.Name, err)
			}
			s.Counters = append(s.Counters, c)
			done++
		}
	}
	s = finish(s)
	if err := s.Validate(); err != nil {
		return s, fmt.Errorf("the executor's results: %w", err)
	}
	return s, nil
}

func finish(s interference.Study) interference.Study {
	s.FinishedAt = time.Now().UTC()
	return s
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
