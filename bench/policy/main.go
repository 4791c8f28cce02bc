// Command policy compares the spot policies of package policy on spot-availability traces:
// for each case (a trace, a job) every policy runs from -starts start times with deadlines of
// 1.2×, 1.5× and 2× the job's spot-only duration, and the cost relative to the job's best
// on-demand plan (median, p90) and the deadline attainment are printed as Markdown tables.
// The bundled trace is the one `schooner demo` replays; the 1-node traces (nine zones, 0/1
// instance each, 45 days) come from the shared data folder and were not used to tune the
// policy. Raw results (every run) are written as JSON under -out.
//
//	go run ./bench/policy [-starts 50] [-shared ../shared/data] [-out bench/policy/data/DATE]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/planner/bridge"
	"github.com/schooner-ml/schooner/policy"
)

// benchCase is a trace and a job.
type benchCase struct {
	name, about string
	trace       string // directory under -shared; empty: the bundled traces
	zones       []string
	model       bridge.ModelRef
	globalBatch int
	iterations  int64
	maxGPUs     int
	every       int64
}

var cases = []benchCase{
	{name: "bundled-opt350-6000", about: "the issue's job: OPT-350, 6000 iterations, ≤ 8 V100s, 3 zones (bundled 16-node trace)",
		model: bridge.ModelRef{Name: "OPT-350"}, globalBatch: 32, iterations: 6000, maxGPUs: 8, every: 25},
	{name: "bundled-demo-600", about: "`schooner demo`'s job: OPT-350, 600 iterations, ≤ 8 V100s (bundled 16-node trace)",
		model: bridge.ModelRef{Name: "OPT-350"}, globalBatch: 32, iterations: 600, maxGPUs: 8, every: 25},
	{name: "1node-opt350-6000", about: "OPT-350, 6000 iterations, ≤ 8 V100s over 9 zones of one instance each (1-node trace)",
		trace: "spot-traces/availability/1-node/aws-02-15-2023",
		model: bridge.ModelRef{Name: "OPT-350"}, globalBatch: 32, iterations: 6000, maxGPUs: 8, every: 25},
	{name: "1node-us-east-2-gpt2-1gpu", about: "a 124M GPT on one V100, 20000 iterations, us-east-2a/2b only (Can't Be Late's setting; 1-node trace)",
		trace: "spot-traces/availability/1-node/aws-02-15-2023", zones: []string{"us-east-2a", "us-east-2b"},
		model:       bridge.ModelRef{Name: "gpt-124m", Layers: 12, Hidden: 768, Heads: 12, FFN: 3072, Vocab: 50257, SeqLen: 1024},
		globalBatch: 32, iterations: 20000, maxGPUs: 1, every: 100},
}

func main() {
	starts := flag.Int("starts", 50, "start times per trace")
	shared := flag.String("shared", "../shared/data", "the shared data folder (the 1-node traces)")
	out := flag.String("out", "", "directory for the raw JSON (default: bench/policy/data/<today>)")
	only := flag.String("case", "", "run only the cases whose name contains this")
	flag.Parse()
	if *out == "" {
		*out = filepath.Join("bench", "policy", "data", time.Now().UTC().Format("2006-01-02"))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail(err)
	}
	fmt.Printf("spot policies, %d starts per trace, deadlines 1.2×/1.5×/2× the spot-only duration; %s, %d CPUs, %s\n",
		*starts, runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	for _, c := range cases {
		if *only != "" && !strings.Contains(c.name, *only) {
			continue
		}
		res, m, err := run(c, *shared, *starts)
		if err != nil {
			fmt.Printf("\n### %s\n\nskipped: %v\n", c.name, err)
			continue
		}
		print(c, m, res)
		b, err := json.Marshal(res)
		if err != nil {
			fail(err)
		}
		if err := os.WriteFile(filepath.Join(*out, c.name+".json"), b, 0o644); err != nil {
			fail(err)
		}
	}
}

func run(c benchCase, shared string, starts int) (*policy.Result, *policy.Market, error) {
	var m *policy.Market
	var err error
	if c.trace == "" {
		traces, terr := sim.BundledTraces()
		if terr != nil {
			return nil, nil, terr
		}
		m, err = policy.NewMarket("bundled "+sim.BundledTraceSet, traces)
	} else {
		m, _, err = policy.LoadMarket(filepath.Join(shared, c.trace))
	}
	if err != nil {
		return nil, nil, err
	}
	if m, err = m.Only(c.zones); err != nil {
		return nil, nil, err
	}
	mp, nw, err := (&bridge.Models{}).Profile(c.model)
	if err != nil {
		return nil, nil, err
	}
	tp := &policy.PlannerThroughput{Model: mp, Network: nw, GlobalBatch: c.globalBatch, Market: m}
	if err := tp.Check(c.maxGPUs); err != nil {
		return nil, nil, err
	}
	job := policy.Job{Iterations: c.iterations, CheckpointEvery: c.every, MaxGPUs: c.maxGPUs, Throughput: tp}
	res, err := policy.Eval(job, m, policy.Grid{Starts: starts})
	return res, m, err
}

func print(c benchCase, m *policy.Market, res *policy.Result) {
	fmt.Printf("\n### %s\n\n%s. Trace %s (%d zones, %.0f h); spot-only duration %.1f h; %d runs in %s.\n\n",
		c.name, c.about, m.Source, len(m.Zones), m.Length.Hours(), res.SpotOnly.Hours(), len(res.Runs), res.Elapsed.Round(time.Millisecond))
	fmt.Println("| policy | 1.2×: median / p90 cost, met | 1.5×: median / p90 cost, met | 2×: median / p90 cost, met |")
	fmt.Println("|---|---|---|---|")
	byPolicy := map[string][]policy.Summary{}
	var order []string
	for _, s := range res.Summaries {
		if _, ok := byPolicy[s.Policy]; !ok {
			order = append(order, s.Policy)
		}
		byPolicy[s.Policy] = append(byPolicy[s.Policy], s)
	}
	for _, p := range order {
		cells := []string{p}
		for _, s := range byPolicy[p] {
			cell := fmt.Sprintf("%.2f / %.2f, %.0f%%", s.MedianRatio, s.P90Ratio, 100*s.Attainment)
			if s.CostRuns == 0 {
				cell = fmt.Sprintf("- / -, %.0f%%", 100*s.Attainment)
			}
			if s.Unfinished > 0 {
				cell += fmt.Sprintf(" (%d unfinished, not in the cost)", s.Unfinished)
			}
			cells = append(cells, cell)
		}
		fmt.Println("| " + strings.Join(cells, " | ") + " |")
	}
	cells := []string{"*omniscient bound* (no policy that keeps the deadline pays less)"}
	for _, b := range res.Bounds {
		cell := fmt.Sprintf("%.2f / %.2f", b.MedianRatio, b.P90Ratio)
		if b.Infeasible > 0 {
			cell += fmt.Sprintf(" (%d starts no policy can finish from in time)", b.Infeasible)
		}
		cells = append(cells, cell)
	}
	fmt.Println("| " + strings.Join(cells, " | ") + " |")
	var base []string
	for i, b := range res.Baselines {
		base = append(base, fmt.Sprintf("%.1f×: %d GPUs, %.1f h, $%.2f", res.Deadlines[i],
			b.GPUs, b.Duration.Hours(), b.CostUSD))
	}
	fmt.Printf("\nBest on-demand plans (cost 1.00): %s.\n", strings.Join(base, "; "))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench/policy:", err)
	os.Exit(1)
}
