// Command servingspot measures spot-aware serving on the simulated market replaying the
// bundled spot traces: the same deployment (examples/serve-tiny.yaml's: the tiny model in two
// pipeline stages, real inference workers on CPU), the same seeded Poisson load and the same
// stretch of the traces, under each serving policy of `schooner demo serve --policy`:
// spot-aware (schooner's: spot with on-demand fallback, notices migrate stages, stages on
// fallback machines return to spot, KV caches replicated), restart-only (spot only, notices
// ignored, no KV replication: a lost stage is restarted) and on-demand (the cost baseline).
// No fault is injected: every preemption is the trace's. It prints, per policy, the cost
// against the on-demand run, the end-to-end and first-token p99, and the failed requests, and
// keeps every run's summary, report, timeline and market usage report (a line per machine) in
// -out, the usage summed by capacity beside the simulator's split of the same stretch. The CLI
// is built once, so the bench runs what users run.
//
//	go run ./bench/servingspot [-trace-start 177h30m] [-time-scale 30] [-duration 8m] [-rate 0.5]
package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/schooner-ml/schooner/bench/internal/cli"
	"github.com/schooner-ml/schooner/bench/internal/machine"
	"github.com/schooner-ml/schooner/policy"
	"github.com/schooner-ml/schooner/report"
)

// spec is examples/serve-tiny.yaml's deployment kept to the zones and the shape the bundled
// traces replay (elsewhere the simulated market invents capacity, and nothing is preempted).
const spec = `name: tiny-chat
model: {name: tiny, seed: 7}
stages: 2
replicas: 1
resources:
  clouds: [aws]
  zones: [us-east-2b, us-west-2a, us-west-2c]
  instance_types: [p3.2xlarge]
spot: spot-with-fallback
max_batch: 16
max_context: 2048
kv_replication: "on"
latency: {ttft_ms: 500, tpot_ms: 50}
queue: 128
`

func main() { cli.Main("servingspot", run) }

func run(args []string, w io.Writer) error {
	fs := cli.FlagSet("servingspot", w)
	start := fs.Duration("trace-start", 177*time.Hour+30*time.Minute, "where in the bundled traces the runs start (177h30m: a spot drought in every zone, then spot back, then preemptions)")
	scale := fs.Float64("time-scale", 30, "simulated seconds per wall second")
	duration := fs.Duration("duration", 8*time.Minute, "how long (wall) the load sends requests; the trace stretch is about this times the time scale, plus the start-up and the reference")
	rate := fs.Float64("rate", 0.5, "requests per second of the Poisson load")
	stack := fs.Bool("stack", true, "run the full stack (about 10 minutes of wall time per policy); false: only the trace-replay simulator")
	starts := fs.Int("starts", 50, "start times of the trace-replay simulator's runs, spread over the bundled traces")
	window := fs.Duration("window", 24*time.Hour, "length of each simulated deployment")
	stretch := fs.Duration("stretch", 0, "length of the simulator's run on the stack's stretch of the traces (0: the spot-aware stack run's, wall time × time scale)")
	only := fs.String("policies", strings.Join(policy.ServePolicies, ","), "the policies to run, comma-separated (on-demand is the cost baseline)")
	billsFrom := fs.String("bills", "", "with -stack=false: an earlier run's -out directory, whose market usage reports (<policy>-report/demo-serve-usage.jsonl) to set beside the simulator's split of the stretch")
	out := fs.String("out", filepath.Join("bench", "servingspot", "data", time.Now().Format("2006-01-02")), "directory for the raw JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *scale <= 0 || *rate <= 0 || *duration <= 0 {
		return fmt.Errorf("-time-scale, -rate and -duration must be positive")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	machineLine := machine.Line()
	if *stack {
		*billsFrom = *out
		runs, err := runStack(strings.Split(*only, ","), *start, *scale, *duration, *rate, *out)
		if err != nil {
			return err
		}
		if err := cli.WriteJSON(filepath.Join(*out, "comparison.json"), map[string]any{"trace_start_ns": *start, "time_scale": *scale,
			"load_duration_ns": *duration, "rate": *rate, "machine": machineLine, "runs": runs}); err != nil {
			return err
		}
		printTable(w, runs)
		if *stretch <= 0 && len(runs) > 0 {
			*stretch = time.Duration(runs[0].WallSeconds * *scale * float64(time.Second)).Round(time.Minute)
		}
	}
	sims, err := simulate(*starts, *window)
	if err != nil {
		return err
	}
	var same []policy.ServingRun
	if *stretch > 0 {
		if same, err = sameWindow(*start, *stretch); err != nil {
			return err
		}
		fmt.Fprintf(w, "\nThe trace-replay simulator on the stack's stretch (%s from %s):\n\n", *stretch, *start)
		printSimRuns(w, same)
	}
	var bills []stackBill
	if *billsFrom != "" {
		if bills, err = readBills(*billsFrom, strings.Split(*only, ",")); err != nil {
			return err
		}
		if len(bills) > 0 {
			fmt.Fprintf(w, "\nThe stack's bill by machine (the market's usage report) beside the simulator's on the same stretch:\n\n")
			printBills(w, bills, same)
		}
	}
	fmt.Fprintf(w, "\nThe trace-replay simulator, %d starts spread over the bundled traces, %s each:\n\n", *starts, *window)
	printSims(w, sims)
	return cli.WriteJSON(filepath.Join(*out, "simulated.json"), map[string]any{"window_ns": *window, "starts": *starts, "machine": machineLine,
		"summaries": sims, "stretch_start_ns": *start, "stretch_ns": *stretch, "stretch": same, "stack_bills": bills})
}

// runStack builds the CLI and runs `schooner demo serve` under each policy.
func runStack(policies []string, start time.Duration, scale float64, duration time.Duration, rate float64, out string) ([]report.ServeSummary, error) {
	tmp, err := os.MkdirTemp("", "servingspot")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin, err := cli.BuildSchooner(tmp)
	if err != nil {
		return nil, err
	}
	specFile := filepath.Join(out, "spec.yaml")
	if err := os.WriteFile(specFile, []byte(spec), 0o644); err != nil {
		return nil, err
	}
	var runs []report.ServeSummary
	for _, p := range policies {
		fmt.Fprintf(os.Stderr, "servingspot: %s from %s of the traces at %gx, %s of load\n", p, start, scale, duration)
		s, err := serve(bin, specFile, p, start, scale, duration, rate, filepath.Join(tmp, p), filepath.Join(out, p+".json"))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		runs = append(runs, s)
	}
	return runs, nil
}

// serve runs `schooner demo serve` under one policy and keeps its JSON summary in file. A
// run whose requests failed is a result, not an error: the table shows it.
func serve(bin, specFile, policy string, start time.Duration, scale float64, duration time.Duration, rate float64, dataDir, file string) (report.ServeSummary, error) {
	f, err := os.Create(file)
	if err != nil {
		return report.ServeSummary{}, err
	}
	defer f.Close()
	cmd := exec.Command(bin, "demo", "serve", "--spec", specFile, "--no-faults", "--json", "--headless", "--policy", policy,
		"--trace-start", start.String(), "--time-scale", fmt.Sprint(scale), "--boot-time", "2m", "--notice", "2m",
		"--duration", duration.String(), "--rate", fmt.Sprint(rate), "--timeout", (duration + 20*time.Minute).String(),
		"--data-dir", dataDir, "--out", filepath.Join(filepath.Dir(file), policy+"-report"))
	cmd.Stdout, cmd.Stderr = f, os.Stderr
	runErr := cmd.Run()
	var s report.ServeSummary
	if err := cli.ReadJSON(file, &s); err != nil {
		return s, fmt.Errorf("schooner demo serve: %v; its summary: %w", runErr, err)
	}
	s.Policy = policy
	return s, nil
}

// printTable is the comparison as Markdown: each policy's cost against the on-demand run.
func printTable(w io.Writer, runs []report.ServeSummary) {
	base := 0.0
	for _, r := range runs {
		if r.Policy == policy.ServeOnDemand {
			base = r.CostUSD
		}
	}
	fmt.Fprintln(w, "| policy | cost | vs the on-demand run | vs its machines on demand | requests: failed / differing / total | latency p50 / p99 | first token p99 | preemptions / notices / failovers / back to spot |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|---|---:|---|")
	for _, r := range runs {
		vs := "—"
		if base > 0 {
			vs = fmt.Sprintf("%.2f", r.CostUSD/base)
		}
		own := "—"
		if r.OnDemandCostUSD > 0 {
			own = fmt.Sprintf("%.2f", r.CostUSD/r.OnDemandCostUSD)
		}
		fmt.Fprintf(w, "| %s | $%.3f | %s | %s | %d / %d / %d | %.0f / %.0f ms | %.0f ms | %d / %d / %d / %d |\n", r.Policy, r.CostUSD, vs, own,
			r.Failed, r.Differing, r.Requests, r.Latency.P50, r.Latency.P99, r.TTFT.P99, r.Preemptions, r.Notices, r.Failovers, r.SpotReturns)
	}
}
