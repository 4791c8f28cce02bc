// Package calibrate fits a model profile to measured runs: the framework memory overhead (the
// part of a GPU's peak memory no model term explains) and a compute correction per GPU type,
// so the simulator predicts what this cluster, this framework and these library versions
// actually do (docs/profiles.md, "Calibrating a cluster"). A measured run is a Case: a plan
// and what it measured, in the file format bench/planaccuracy scores.
package calibrate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/schooner-ml/schooner/planner"
)

// Case is one measured plan.
type Case struct {
	Name   string
	Source string
	Plan   *planner.Plan
	// IterSeconds is the measured time of one iteration; PeakMemBytes the largest peak memory
	// over each stage's GPUs (empty: not measured).
	IterSeconds  float64
	PeakMemBytes []float64
}

// caseFile is a case as stored: {"name", "source", "plan", "measured": {...}}.
type caseFile struct {
	Name     string          `json:"name"`
	Source   string          `json:"source,omitempty"`
	Plan     json.RawMessage `json:"plan"`
	Measured struct {
		IterSeconds  float64   `json:"iter_seconds"`
		PeakMemBytes []float64 `json:"peak_mem_bytes,omitempty"`
	} `json:"measured"`
}

// ReadCaseFile reads and checks one case; its name defaults to the file's.
func ReadCaseFile(path string) (Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Case{}, err
	}
	var f caseFile
	if err := json.Unmarshal(data, &f); err != nil {
		return Case{}, fmt.Errorf("not a case file: %w", err)
	}
	c := Case{Name: f.Name, Source: f.Source, IterSeconds: f.Measured.IterSeconds, PeakMemBytes: f.Measured.PeakMemBytes}
	if c.Name == "" {
		c.Name = filepath.Base(path)
	}
	if !(c.IterSeconds > 0) {
		return c, fmt.Errorf("measured.iter_seconds must be positive")
	}
	if c.Plan, err = planner.ParsePlan(f.Plan); err != nil {
		return c, fmt.Errorf("plan: %w", err)
	}
	if n := len(c.PeakMemBytes); n != 0 && n != len(c.Plan.Stages) {
		return c, fmt.Errorf("measured.peak_mem_bytes has %d entries for %d stages", n, len(c.Plan.Stages))
	}
	return c, nil
}

// CaseFiles lists dir's case files (*.json), sorted.
func CaseFiles(dir string) ([]string, error) {
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("case directory: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("case directory %s is a file: give the directory of measured runs (*.json)", dir)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no case files (*.json) in %s", dir)
	}
	slices.Sort(files)
	return files, nil
}
