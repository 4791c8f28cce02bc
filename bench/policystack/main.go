// Command policystack compares the full stack with the policy simulator under the same spot
// policy: for -starts start times spread over the bundled traces (the ones `schooner policy
// eval` picks), it runs the demo's job through `schooner demo --no-faults --trace-start T`
// (Temporal, the simulated market, the TrainingJob and its deadline policy, real checkpoints,
// simulated trainers) and through `schooner policy eval` from the same start, and prints each
// start's two costs and their difference as a Markdown table. The stack is the CLI built
// once into a temporary directory, so the comparison runs exactly what users run. Raw
// results go to -out.
//
//	go run ./bench/policystack [-starts 5] [-time-scale 60] [-sim-restart 4m] [-out bench/policy/data/DATE/fullstack]
package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/schooner-ml/schooner/bench/internal/cli"
	"github.com/schooner-ml/schooner/bench/internal/machine"
	"github.com/schooner-ml/schooner/policy"
	"github.com/schooner-ml/schooner/report"
)

// row is one start's comparison.
type row struct {
	Start        time.Duration `json:"start_ns"`
	SimCostUSD   float64       `json:"sim_cost_usd"`
	SimPreempt   int           `json:"sim_preemptions"`
	SimRestarts  int           `json:"sim_restarts"`
	StackCostUSD float64       `json:"stack_cost_usd"`
	// StackBilledUSD is what the simulated market billed for the job (StackCostUSD is the
	// job's own accounting, which counts boots and keeps the price of each acquisition).
	StackBilledUSD float64 `json:"stack_billed_usd"`
	StackPreempt   int     `json:"stack_preemptions"`
	StackReplans   int     `json:"stack_replans"`
	Verified       bool    `json:"stack_state_verified"`
	DiffPct        float64 `json:"diff_pct"`
	WallSeconds    float64 `json:"stack_wall_seconds"`
}

func main() { cli.Main("policystack", run) }

func run(args []string, w io.Writer) error {
	fs := cli.FlagSet("policystack", w)
	starts := fs.Int("starts", 5, "start times spread over the bundled traces")
	scale := fs.Float64("time-scale", 60, "the stack's simulated seconds per wall second (60: at 240 the stack's own latencies cost simulated time; see BENCHMARKS.md)")
	iterations := fs.Int("iterations", 600, "iterations of the demo's job")
	deadline := fs.String("deadline", "24h", "the job's deadline")
	restart := fs.Duration("sim-restart", policy.DefaultRestart, "the simulator's --restart: training stopped per change of machines, boot included (the stack's simulated trainers relaunch in about a simulated minute after the 2-minute boot at 60x: 3m compares like with like)")
	out := fs.String("out", filepath.Join("bench", "policy", "data", time.Now().Format("2006-01-02"), "fullstack"), "directory for the raw JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return compare(w, *starts, *scale, *iterations, *deadline, *restart, *out)
}

// compare runs both sides from each start and writes the raw JSON and the table.
func compare(w io.Writer, starts int, scale float64, iterations int, deadline string, restart time.Duration, out string) error {
	if starts < 1 || scale <= 0 || iterations < 1 || restart <= 0 {
		return fmt.Errorf("-starts, -time-scale, -iterations and -sim-restart must be positive")
	}
	tmp, err := os.MkdirTemp("", "policystack")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := cli.BuildSchooner(tmp)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	evalFile := filepath.Join(out, "policy-eval.json")
	if err := command(bin, "policy", "eval", "--spec", "examples/demo.yaml", "--iterations", fmt.Sprint(iterations),
		"--deadlines", deadline, "--starts", fmt.Sprint(starts), "--policies", "schooner-deadline", "--restart", restart.String(),
		"--json", "--out", evalFile).Run(); err != nil {
		return fmt.Errorf("policy eval: %w", err)
	}
	var ev policy.Result
	if err := cli.ReadJSON(evalFile, &ev); err != nil {
		return err
	}
	spec, err := demoSpec(tmp, iterations, deadline)
	if err != nil {
		return err
	}
	var rows []row
	for i, s := range ev.Starts {
		r := row{Start: s}
		for _, run := range ev.Runs {
			if run.Start == s && run.Policy == "schooner-deadline" {
				r.SimCostUSD, r.SimPreempt, r.SimRestarts = run.CostUSD, run.Preemptions, run.Restarts
			}
		}
		file := filepath.Join(out, fmt.Sprintf("demo-start-%02d.json", i))
		d, err := stackRun(bin, spec, s, scale, filepath.Join(tmp, fmt.Sprint(i)), file)
		if err != nil {
			return fmt.Errorf("start %s: %w", s, err)
		}
		r.StackCostUSD, r.StackPreempt, r.StackReplans, r.Verified, r.WallSeconds = d.CostUSD, d.Preemptions, d.Replans, d.StateVerified, d.WallSeconds
		r.StackBilledUSD = d.BilledUSD
		r.DiffPct = 100 * (d.CostUSD/r.SimCostUSD - 1)
		rows = append(rows, r)
		fmt.Fprintf(os.Stderr, "start %s: simulator $%.3f, stack $%.3f (%+.1f%%), billed by the market $%.3f\n", s, r.SimCostUSD, r.StackCostUSD, r.DiffPct, r.StackBilledUSD)
	}
	if err := cli.WriteJSON(filepath.Join(out, "comparison.json"), map[string]any{"time_scale": scale, "iterations": iterations,
		"deadline": deadline, "sim_restart_ns": restart, "machine": machine.Line(), "rows": rows}); err != nil {
		return err
	}
	printTable(w, rows)
	return nil
}

// demoSpec writes the demo's spec with the bench's iterations and deadline.
func demoSpec(dir string, iterations int, deadline string) (string, error) {
	raw, err := os.ReadFile(filepath.Join("examples", "demo.yaml"))
	if err != nil {
		return "", fmt.Errorf("run from the repository root: %w", err)
	}
	spec := filepath.Join(dir, "demo.yaml")
	extra := fmt.Sprintf("\niterations: %d\ndeadline: %s\n", iterations, deadline)
	return spec, os.WriteFile(spec, append(stripKeys(raw, "iterations", "deadline"), extra...), 0o644)
}

// stackRun runs the demo's job from start through the whole stack and keeps its JSON.
func stackRun(bin, spec string, start time.Duration, scale float64, dataDir, file string) (report.Summary, error) {
	f, err := os.Create(file)
	if err != nil {
		return report.Summary{}, err
	}
	defer f.Close()
	cmd := exec.Command(bin, "demo", "--no-faults", "--json", "--headless", "--spec", spec, "--trace-start", start.String(),
		"--time-scale", fmt.Sprint(scale), "--timeout", "15m", "--data-dir", dataDir, "--out", filepath.Join(dataDir, "report"))
	cmd.Stdout, cmd.Stderr = f, nil
	if err := cmd.Run(); err != nil {
		return report.Summary{}, fmt.Errorf("schooner demo: %w (its summary: %s)", err, file)
	}
	var d report.Summary
	if err := cli.ReadJSON(file, &d); err != nil {
		return d, err
	}
	if d.Status != "completed" || !d.StateVerified {
		return d, fmt.Errorf("the job ended %s, state verified %v", d.Status, d.StateVerified)
	}
	return d, nil
}

func printTable(w io.Writer, rows []row) {
	fmt.Fprintln(w, "| start | simulator | full stack (the job's accounting) | difference | billed by the market | difference | simulator preemptions / restarts | stack preemptions / replans |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	var diffs []float64
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | $%.3f | $%.3f | %+.1f%% | $%.3f | %+.1f%% | %d / %d | %d / %d |\n", r.Start, r.SimCostUSD, r.StackCostUSD, r.DiffPct,
			r.StackBilledUSD, 100*(r.StackBilledUSD/r.SimCostUSD-1), r.SimPreempt, r.SimRestarts, r.StackPreempt, r.StackReplans)
		diffs = append(diffs, math.Abs(r.DiffPct))
	}
	slices.Sort(diffs)
	fmt.Fprintf(w, "\nmedian |difference| %.1f%%, largest %.1f%% over %d starts\n", diffs[len(diffs)/2], diffs[len(diffs)-1], len(diffs))
}

func command(name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	return c
}

// stripKeys drops the top-level YAML lines of the given keys (the bench sets them itself).
func stripKeys(yaml []byte, keys ...string) []byte {
	var out []byte
	for _, line := range bytes.Split(yaml, []byte("\n")) {
		drop := false
		for _, k := range keys {
			drop = drop || bytes.HasPrefix(line, []byte(k+":"))
		}
		if !drop {
			out = append(append(out, line...), '\n')
		}
	}
	return out
}
