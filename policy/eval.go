package policy

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"
)

// Makers are every policy the simulator compares, schooner's first.
func Makers() []Maker {
	return []Maker{DeadlineAware(), UniformProgress(), SkyPilotEagerNextRegion(), SkyPilotFailover(), AllSpot(), AllOnDemand()}
}

// Grid is what Eval runs: every policy from every start with every deadline.
type Grid struct {
	Policies []Maker
	// Starts is how many start times, spread evenly over the trace (default 50).
	Starts int
	// Deadlines are multiples of the job's spot-only duration (default 1.2, 1.5, 2).
	Deadlines []float64
	// Progress, when set, is called after each run with the runs done and the total.
	Progress func(done, total int)
}

// Summary is one policy at one deadline over every start.
type Summary struct {
	Policy   string  `json:"policy"`
	Deadline float64 `json:"deadline_factor"`
	Runs     int     `json:"runs"`
	// MedianRatio and P90Ratio are the run's cost over the best on-demand plan's cost, over
	// the CostRuns runs that finished: a run stopped at its limit with iterations left paid
	// for a job it did not do, and counting its bill as cheap flattered the policies that
	// cannot finish (SkyPilot's clusters on a market whose zones never hold max_gpus showed a
	// cost of 0.00). Both are 0 when no run finished.
	MedianRatio float64 `json:"median_cost_ratio"`
	P90Ratio    float64 `json:"p90_cost_ratio"`
	CostRuns    int     `json:"cost_runs"`
	// Attainment is the share of runs done by the deadline.
	Attainment float64 `json:"deadline_attainment"`
	Unfinished int     `json:"unfinished"`
	// OnDemandShare is the share of the cost spent on on-demand GPUs (all runs together).
	OnDemandShare float64 `json:"on_demand_share"`
}

// Result is Eval's answer.
type Result struct {
	Trace string `json:"trace"`
	// SpotOnly is the job's duration on its largest plan with nothing lost (the deadlines'
	// unit); Starts are the start offsets used.
	SpotOnly time.Duration   `json:"spot_only_ns"`
	Starts   []time.Duration `json:"starts_ns"`
	// Deadlines are the deadline factors run, and Baselines the best on-demand plan for each.
	Deadlines []float64      `json:"deadline_factors"`
	Baselines []OnDemandPlan `json:"on_demand_baselines"`
	Summaries []Summary      `json:"summaries"`
	// Bounds are the least any policy could pay at each deadline (LowerBound), summarised
	// as the runs are, and BoundRuns every start's bound.
	Bounds    []BoundSummary `json:"bounds"`
	BoundRuns []Bound        `json:"bound_runs"`
	Runs      []Run          `json:"runs"`
	Elapsed   time.Duration  `json:"elapsed_ns"`
}

// Eval simulates every policy of g from every start with every deadline, in parallel, and
// summarises the cost (relative to the best on-demand plan for that deadline) and the
// deadline attainment of each policy at each deadline.
func Eval(job Job, m *Market, g Grid) (*Result, error) {
	if err := job.Validate(); err != nil {
		return nil, err
	}
	job = job.withDefaults(m)
	g = g.withDefaults()
	t0 := time.Now()
	res := &Result{Trace: m.Source, SpotOnly: SpotOnlyDuration(job, m), Deadlines: g.Deadlines}
	if res.SpotOnly <= 0 || res.SpotOnly >= never {
		return nil, fmt.Errorf("policy eval: the job has no plan on %d %s GPUs", job.MaxGPUs, m.GPU)
	}
	res.Starts = starts(m, g, res.SpotOnly)
	type task struct {
		mk       Maker
		start    time.Duration
		deadline time.Duration
		factor   float64
		base     OnDemandPlan
		i        int
	}
	var tasks []task
	for _, f := range g.Deadlines {
		dl := time.Duration(f * float64(res.SpotOnly))
		base := BestOnDemand(job, m, dl)
		res.Baselines = append(res.Baselines, base)
		for _, mk := range g.Policies {
			for _, s := range res.Starts {
				tasks = append(tasks, task{mk: mk, start: s, deadline: dl, factor: f, base: base, i: len(tasks)})
			}
		}
	}
	res.Runs = make([]Run, len(tasks))
	errs := make([]error, len(tasks))
	ch := make(chan task)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range ch {
				res.Runs[t.i], errs[t.i] = Simulate(job, m, t.mk, t.start, Options{Deadline: t.deadline, Baseline: t.base})
				if g.Progress != nil {
					mu.Lock()
					done++
					g.Progress(done, len(tasks))
					mu.Unlock()
				}
			}
		}()
	}
	for _, t := range tasks {
		ch <- t
	}
	close(ch)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	for fi, f := range g.Deadlines {
		for _, mk := range g.Policies {
			var runs []Run
			for i, t := range tasks {
				if t.factor == f && t.mk.Name == mk.Name {
					runs = append(runs, res.Runs[i])
				}
			}
			res.Summaries = append(res.Summaries, summarise(mk.Name, f, runs, res.Baselines[fi]))
		}
	}
	for fi, f := range g.Deadlines {
		dl := time.Duration(f * float64(res.SpotOnly))
		var bounds []Bound
		for _, s := range res.Starts {
			bounds = append(bounds, LowerBound(job, m, s, dl))
		}
		res.BoundRuns = append(res.BoundRuns, bounds...)
		res.Bounds = append(res.Bounds, summariseBounds(f, bounds, res.Baselines[fi]))
	}
	res.Elapsed = time.Since(t0)
	return res, nil
}

// BoundSummary is the omniscient bound at one deadline over every start: the cost no policy
// could go below (relative to the best on-demand plan), and how many starts no policy could
// finish from by the deadline.
type BoundSummary struct {
	Deadline    float64 `json:"deadline_factor"`
	MedianRatio float64 `json:"median_cost_ratio"`
	P90Ratio    float64 `json:"p90_cost_ratio"`
	Infeasible  int     `json:"infeasible"`
}

func summariseBounds(factor float64, bounds []Bound, base OnDemandPlan) BoundSummary {
	s := BoundSummary{Deadline: factor}
	var ratios []float64
	for _, b := range bounds {
		if !b.Feasible {
			s.Infeasible++
			continue
		}
		ratios = append(ratios, b.CostUSD/base.CostUSD)
	}
	sort.Float64s(ratios)
	s.MedianRatio, s.P90Ratio = quantile(ratios, 0.5), quantile(ratios, 0.9)
	return s
}

func (g Grid) withDefaults() Grid {
	if len(g.Policies) == 0 {
		g.Policies = Makers()
	}
	if g.Starts <= 0 {
		g.Starts = 50
	}
	if len(g.Deadlines) == 0 {
		g.Deadlines = []float64{1.2, 1.5, 2}
	}
	return g
}

// starts spreads the start times evenly over the part of the trace that leaves room for the
// longest deadline twice over (a late run still replays recorded capacity), or over the first
// half of a trace too short for that.
func starts(m *Market, g Grid, spotOnly time.Duration) []time.Duration {
	longest := 0.0
	for _, f := range g.Deadlines {
		longest = max(longest, f)
	}
	span := m.Length - time.Duration(2*longest*float64(spotOnly))
	if span < m.Length/2 {
		span = m.Length / 2
	}
	out := make([]time.Duration, g.Starts)
	for i := range out {
		at := span * time.Duration(i) / time.Duration(g.Starts)
		out[i] = at.Truncate(m.Gap)
	}
	return out
}

func summarise(name string, factor float64, runs []Run, base OnDemandPlan) Summary {
	s := Summary{Policy: name, Deadline: factor, Runs: len(runs)}
	ratios := make([]float64, 0, len(runs))
	met, cost, od := 0, 0.0, 0.0
	for _, r := range runs {
		if r.Finished {
			ratios = append(ratios, r.CostUSD/base.CostUSD)
		} else {
			s.Unfinished++
		}
		if r.Met && r.Finished {
			met++
		}
		cost += r.CostUSD
		od += r.OnDemandUSD
	}
	sort.Float64s(ratios)
	s.CostRuns = len(ratios)
	s.MedianRatio = quantile(ratios, 0.5)
	s.P90Ratio = quantile(ratios, 0.9)
	if len(runs) > 0 {
		s.Attainment = float64(met) / float64(len(runs))
	}
	if cost > 0 {
		s.OnDemandShare = od / cost
	}
	return s
}

// quantile of sorted values, linear between neighbours.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	f := pos - float64(i)
	return sorted[i]*(1-f) + sorted[i+1]*f
}
