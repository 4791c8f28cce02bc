// Command planaccuracy measures the planner's simulator against measured plans: a directory
// of cases, each a plan (docs/plan-format.md) with the iteration time and the peak memory per
// stage that a real run of it measured. For each it simulates the plan with the profiles as
// shipped (or a profiles directory) and prints the error of the predicted time and memory;
// last the median and 90th-percentile absolute errors against the goal (5%). A case that
// cannot be simulated is listed with why, and counted: an accuracy that leaves out what it
// cannot explain is not one.
//
//	go run ./bench/planaccuracy -dir CASES [-profiles DIR] [-markdown]
//
// A case file (CASES/*.json):
//
//	{"name": "opt350-gh200-tp4-mbs1", "source": "where and how it was measured",
//	 "plan": { ...a plan... },
//	 "measured": {"iter_seconds": 1.92, "peak_mem_bytes": [2.1e10, 1.9e10]}}
//
// peak_mem_bytes has one entry per stage (the largest over the stage's GPUs) or is left out
// (the format is planner/calibrate's, which fits a profile to such cases).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/schooner-ml/schooner/bench/internal/cli"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/calibrate"
	"github.com/schooner-ml/schooner/planner/profiles"
)

// goalPercent is the median absolute error the simulator should stay within (issue 20).
const goalPercent = 5.0

// Row is one case's outcome: the relative errors (predicted / measured − 1), or why none.
type Row struct {
	Case      string    `json:"case"`
	GPUs      string    `json:"gpus"`
	Predicted float64   `json:"predicted_iter_s"`
	Measured  float64   `json:"measured_iter_s"`
	TimeErr   float64   `json:"time_err"`
	MemErrs   []float64 `json:"mem_errs,omitempty"` // one per stage
	Derived   bool      `json:"derived"`            // the simulator used datasheet-derived compute
	Error     string    `json:"error,omitempty"`
}

func main() { cli.Main("planaccuracy", run) }

func run(args []string, out io.Writer) error {
	fs := cli.FlagSet("planaccuracy", out)
	dir := fs.String("dir", "", "directory of case files (*.json)")
	profilesDir := fs.String("profiles", "", "profiles: schooner's format or Sailor's layout (empty: as shipped)")
	markdown := fs.Bool("markdown", false, "print Markdown tables")
	asJSON := fs.Bool("json", false, "print the rows as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("-dir is required: the directory of measured plans")
	}
	rows, err := Evaluate(*dir, *profilesDir)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	printRows(out, rows, *markdown)
	return nil
}

// Evaluate simulates every case under dir.
func Evaluate(dir, profilesDir string) ([]Row, error) {
	files, err := calibrate.CaseFiles(dir)
	if err != nil {
		return nil, err
	}
	net, err := profiles.LoadNetwork(profilesDir)
	if err != nil {
		return nil, fmt.Errorf("loading the network profile, %w", err)
	}
	models := map[string]*planner.ModelProfile{}
	var rows []Row
	for _, f := range files {
		rows = append(rows, evaluate(f, profilesDir, net, models))
	}
	return rows, nil
}

func evaluate(file, profilesDir string, net *planner.Network, models map[string]*planner.ModelProfile) Row {
	row := Row{Case: filepath.Base(file)}
	c, err := calibrate.ReadCaseFile(file)
	if c.Name != "" {
		row.Case = c.Name
	}
	if c.Plan != nil {
		row.GPUs = gpuList(c.Plan)
	}
	if err != nil {
		row.Error = err.Error()
		return row
	}
	m, ok := models[c.Plan.Model]
	if !ok {
		if m, err = profiles.Load(c.Plan.Model, profilesDir); err != nil {
			row.Error = fmt.Sprintf("loading the profile of %s: %v", c.Plan.Model, err)
			return row
		}
		models[c.Plan.Model] = m
	}
	est, err := planner.Simulate(c.Plan, m, net)
	if err != nil {
		row.Error = fmt.Sprintf("simulating: %v", err)
		return row
	}
	row.Predicted, row.Measured, row.Derived = est.IterTime, c.IterSeconds, est.Derived
	row.TimeErr = est.IterTime/c.IterSeconds - 1
	for i, meas := range c.PeakMemBytes {
		if meas > 0 {
			row.MemErrs = append(row.MemErrs, est.Stages[i].PeakMemBytes/meas-1)
		}
	}
	return row
}

func gpuList(p *planner.Plan) string {
	var gs []string
	for _, st := range p.Stages {
		for _, r := range st.Replicas {
			g := string(r.GPU)
			if !slices.Contains(gs, g) {
				gs = append(gs, g)
			}
		}
	}
	return strings.Join(gs, "+")
}

// Summary is the median and 90th-percentile absolute errors, in percent.
type Summary struct {
	Cases, Failed       int
	TimeMedian, TimeP90 float64
	MemMedian, MemP90   float64
	MemSamples          int
}

// Summarize takes the absolute errors of the rows that simulated.
func Summarize(rows []Row) Summary {
	var s Summary
	var times, mems []float64
	for _, r := range rows {
		s.Cases++
		if r.Error != "" {
			s.Failed++
			continue
		}
		times = append(times, 100*math.Abs(r.TimeErr))
		for _, e := range r.MemErrs {
			mems = append(mems, 100*math.Abs(e))
		}
	}
	s.TimeMedian, s.TimeP90 = quantile(times, 0.5), quantile(times, 0.9)
	s.MemMedian, s.MemP90 = quantile(mems, 0.5), quantile(mems, 0.9)
	s.MemSamples = len(mems)
	return s
}

// quantile is the q-quantile by linear interpolation; NaN for no values.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

func printRows(w io.Writer, rows []Row, markdown bool) {
	sep, head := "  ", "%-34s %-22s %10s %10s %8s %s\n"
	if markdown {
		fmt.Fprintln(w, "| case | GPUs | predicted s | measured s | time error | memory error per stage |")
		fmt.Fprintln(w, "|---|---|---:|---:|---:|---|")
	} else {
		fmt.Fprintf(w, head, "CASE", "GPUS", "PREDICTED", "MEASURED", "TIME", "MEMORY PER STAGE")
	}
	for _, r := range rows {
		if r.Error != "" {
			if markdown {
				fmt.Fprintf(w, "| %s | %s | — | — | — | not simulated: %s |\n", r.Case, r.GPUs, r.Error)
			} else {
				fmt.Fprintf(w, "%-34s %-22s not simulated: %s\n", r.Case, r.GPUs, r.Error)
			}
			continue
		}
		mem := make([]string, len(r.MemErrs))
		for i, e := range r.MemErrs {
			mem[i] = fmt.Sprintf("%+.1f%%", 100*e)
		}
		derived := ""
		if r.Derived {
			derived = " (derived compute)"
		}
		if markdown {
			fmt.Fprintf(w, "| %s | %s | %.3f | %.3f | %+.1f%% | %s%s |\n", r.Case, r.GPUs, r.Predicted, r.Measured, 100*r.TimeErr, strings.Join(mem, ", "), derived)
		} else {
			fmt.Fprintf(w, "%-34s %-22s %10.3f %10.3f %+7.1f%%%s%s%s\n", r.Case, r.GPUs, r.Predicted, r.Measured, 100*r.TimeErr, sep, strings.Join(mem, " "), derived)
		}
	}
	s := Summarize(rows)
	fmt.Fprintf(w, "\n%d cases, %d not simulated. Time: median |error| %.1f%%, p90 %.1f%%. Memory (%d stages): median %.1f%%, p90 %.1f%%. Goal: median ≤ %.0f%% for both: time %s, memory %s.\n",
		s.Cases, s.Failed, s.TimeMedian, s.TimeP90, s.MemSamples, s.MemMedian, s.MemP90, goalPercent, verdict(s.TimeMedian, s.Failed), verdict(s.MemMedian, s.Failed))
}

func verdict(median float64, failed int) string {
	switch {
	case math.IsNaN(median):
		return "no data"
	case failed > 0:
		return "not met (cases not simulated)"
	case median <= goalPercent:
		return "met"
	}
	return "not met"
}
