package main

import (
	"fmt"
	"math"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/profiles"
)

// row is one configuration, measured and predicted.
type row struct {
	m                         *measurement
	measuredS, predictedS     float64
	measuredMem, predictedMem float64 // bytes, the largest stage
	// derived: the prediction used compute derived from a datasheet, not the profiler's;
	// calibrated: the profile carries a measured memory model.
	derived, calibrated bool
}

// timeErr and memErr are the prediction's signed error, in percent of the measurement.
func (r row) timeErr() float64 { return percentErr(r.predictedS, r.measuredS) }
func (r row) memErr() float64  { return percentErr(r.predictedMem, r.measuredMem) }

func percentErr(predicted, measured float64) float64 { return (predicted - measured) / measured * 100 }

// compareAll simulates every measured configuration with dir's profiles.
func compareAll(ms []measurement, dir string) ([]row, error) {
	net, err := profiles.LoadNetwork(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the network profile of %s, %w", dir, err)
	}
	models := map[string]*planner.ModelProfile{}
	rows := make([]row, 0, len(ms))
	for i := range ms {
		m := &ms[i]
		prof := models[m.Name]
		if prof == nil {
			if prof, err = profiles.Load(m.Name, dir); err != nil {
				return nil, fmt.Errorf("line %d (%s): loading its profile from %s, %w", m.line, m.config(), dir, err)
			}
			models[m.Name] = prof
		}
		r, err := compare(m, prof, net)
		if err != nil {
			return nil, fmt.Errorf("line %d (%s): %w", m.line, m.config(), err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// compare builds the plan the trainer ran, every replica on one 8-GPU machine type in one
// place, and simulates it.
// planOf is the plan the measured configuration ran: its stages, each with DP replicas of
// the measured GPU type on one machine.
func planOf(m *measurement, model string) (*planner.Plan, error) {
	g := gpu.Type(m.GPUType)
	if !gpu.Known(g) {
		return nil, fmt.Errorf("unknown gpu_type %q (known: %v)", m.GPUType, gpu.KnownTypes)
	}
	p := &planner.Plan{Model: model, GlobalBatch: m.GlobalBatch, MicroBatch: m.MicroBatch}
	for _, s := range m.Stages {
		st := planner.Stage{FirstLayer: s.First, LastLayer: s.End - 1}
		for j := 0; j < m.DP; j++ {
			st.Replicas = append(st.Replicas, planner.Replica{GPU: g, TP: m.TP, Zone: "local", Region: "local", GPUsPerNode: 8})
		}
		p.Stages = append(p.Stages, st)
	}
	return p, nil
}

func compare(m *measurement, prof *planner.ModelProfile, net *planner.Network) (row, error) {
	if want := m.Layers + 2; prof.NumLayers() != want {
		return row{}, fmt.Errorf("the profile of %s has %d layers, the measurement %d (embedding, %d blocks, head)",
			prof.Name, prof.NumLayers(), want, m.Layers)
	}
	if m.SeqLen > 0 && prof.SeqLen != m.SeqLen {
		return row{}, fmt.Errorf("the profile of %s is for sequence length %d, the measurement ran %d", prof.Name, prof.SeqLen, m.SeqLen)
	}
	p, err := planOf(m, prof.Name)
	if err != nil {
		return row{}, err
	}
	est, err := planner.Simulate(p, prof, net)
	if err != nil {
		return row{}, fmt.Errorf("simulating, %w", err)
	}
	r := row{m: m, measuredS: *m.IterSeconds, predictedS: est.IterTime, derived: est.Derived, calibrated: prof.MemoryModel != nil}
	for _, b := range m.PeakMem {
		r.measuredMem = math.Max(r.measuredMem, b)
	}
	for _, s := range est.Stages {
		r.predictedMem = math.Max(r.predictedMem, s.PeakMemBytes)
	}
	return r, nil
}
