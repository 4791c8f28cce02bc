package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/schooner-ml/schooner/planner"
)

// measurement is one line of the trainer's -measure-out file: a configuration and what it
// took. Layers counts transformer blocks; stages are half-open ranges of planner layers
// (embedding 0, blocks 1..layers, head layers+1); PeakMemBytes has one entry per stage, the
// largest over that stage's GPUs.
type measurement struct {
	// The model's dimensions, under the same keys as a profile's architecture.
	planner.Architecture
	DP          int       `json:"dp"`
	PP          int       `json:"pp"`
	TP          int       `json:"tp"`
	MicroBatch  int       `json:"micro_batch"`
	GlobalBatch int       `json:"global_batch"`
	Stages      []span    `json:"stages"`
	IterSeconds *float64  `json:"iter_seconds"` // null when the trainer timed no iteration
	PeakMem     []float64 `json:"peak_mem_bytes"`
	GPU         string    `json:"gpu"`
	GPUType     string    `json:"gpu_type"`
	Torch       string    `json:"torch"`
	Driver      string    `json:"driver"`

	line int // in the file, from 1
}

// span is a stage's planner layers, first to end-1.
type span struct {
	First int `json:"first"`
	End   int `json:"end"`
}

// readMeasurements reads every non-blank line of path. The trainer appends to the file, so
// a torn last line (a run killed mid-write) is reported, not ignored.
func readMeasurements(path string) ([]measurement, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading measurements, %w", err)
	}
	defer f.Close()
	var out []measurement
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024) // iter_seconds_all can be long
	for n := 1; sc.Scan(); n++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var m measurement
		if err := json.Unmarshal(text, &m); err != nil {
			return nil, fmt.Errorf("%s line %d: parsing the measurement, %w", path, n, err)
		}
		m.line = n
		if err := m.check(); err != nil {
			return nil, fmt.Errorf("%s line %d (%s): %w", path, n, m.Name, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading measurements %s, %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no measurements", path)
	}
	return out, nil
}

// check says what makes m impossible to compare, before any profile is read.
func (m *measurement) check() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if m.Name == "" {
		add("no name")
	}
	for _, v := range []struct {
		name string
		x    int
	}{{"layers", m.Layers}, {"dp", m.DP}, {"pp", m.PP}, {"tp", m.TP}, {"micro_batch", m.MicroBatch}, {"global_batch", m.GlobalBatch}} {
		if v.x <= 0 {
			add("%s must be positive, got %d", v.name, v.x)
		}
	}
	if m.GPUType == "" {
		add("no gpu_type")
	}
	if m.IterSeconds == nil || !(*m.IterSeconds > 0) {
		add("no measured iteration time (iter_seconds is null or not positive)")
	}
	if len(m.Stages) != m.PP {
		add("%d stages for pp %d", len(m.Stages), m.PP)
	}
	next := 0
	for i, s := range m.Stages {
		if s.First != next || s.End <= s.First {
			add("stage %d covers layers [%d, %d), want a non-empty range starting at %d", i, s.First, s.End, next)
		}
		next = s.End
	}
	if want := m.Layers + 2; len(m.Stages) > 0 && next != want {
		add("the stages end at layer %d, want %d (embedding, %d blocks, head)", next, want, m.Layers)
	}
	if len(m.PeakMem) != len(m.Stages) {
		add("%d peak_mem_bytes entries for %d stages", len(m.PeakMem), len(m.Stages))
	}
	for i, b := range m.PeakMem {
		if !(b > 0) {
			add("peak_mem_bytes[%d] is %v", i, b)
		}
	}
	return errors.Join(errs...)
}

// config names the configuration the way the table shows it.
func (m *measurement) config() string {
	return fmt.Sprintf("%s dp%d/pp%d/tp%d mbs %d gbs %d", m.Name, m.DP, m.PP, m.TP, m.MicroBatch, m.GlobalBatch)
}
