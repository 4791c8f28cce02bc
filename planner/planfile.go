package planner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/schooner-ml/schooner/internal/jsonerr"
)

// ErrInvalidPlan matches, under errors.Is, every error that says a plan is malformed or does
// not suit the model it is checked against.
var ErrInvalidPlan = errors.New("invalid plan")

// PlanError says what is wrong with a plan and where. Stage and Replica are -1 when the
// problem is not one stage's or one replica's.
type PlanError struct {
	Stage   int
	Replica int
	Problem string
}

func (e *PlanError) Error() string {
	switch {
	case e.Stage >= 0 && e.Replica >= 0:
		return fmt.Sprintf("invalid plan: stage %d replica %d: %s", e.Stage, e.Replica, e.Problem)
	case e.Stage >= 0:
		return fmt.Sprintf("invalid plan: stage %d: %s", e.Stage, e.Problem)
	default:
		return "invalid plan: " + e.Problem
	}
}

// Is makes errors.Is(err, ErrInvalidPlan) true.
func (e *PlanError) Is(target error) bool { return target == ErrInvalidPlan }

func planErr(stage, replica int, format string, args ...any) error {
	return &PlanError{Stage: stage, Replica: replica, Problem: fmt.Sprintf(format, args...)}
}

// ParsePlan decodes a plan file (docs/plan-format.md) and checks what can be checked without
// the model's profile: fields it does not know, trailing data, and a plan's shape (stages,
// contiguous layers from 0, one data-parallel degree, TP within a machine, batch sizes).
// Validate finishes the job once the profile is loaded.
func ParsePlan(data []byte) (*Plan, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("parsing plan, %w", jsonerr.Describe(data, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("parsing plan, unexpected data after the plan object at %s", jsonerr.Position(data, dec.InputOffset()))
	}
	if p.Model == "" {
		return nil, planErr(-1, -1, "model is empty: name the model whose profile the plan is for")
	}
	if err := p.checkShape(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Validate checks the plan against the model's profile: the stages cover every layer of m
// exactly once, and every replica's GPU, TP degree and micro-batch size have a compute and a
// memory profile. The error names the stage and replica at fault. Simulate makes the same
// checks; Validate is for callers that have no network at hand.
func (p *Plan) Validate(m *ModelProfile) error {
	if err := p.checkShape(); err != nil {
		return err
	}
	return NewSim(m, nil).checkAgainstModel(p)
}

// checkShape checks what needs no profile. It runs on every Simulate, so it does not allocate
// unless it finds a fault.
func (p *Plan) checkShape() error {
	if len(p.Stages) == 0 {
		return planErr(-1, -1, "no stages")
	}
	if p.MicroBatch < 1 {
		return planErr(-1, -1, "micro_batch is %d, want at least 1", p.MicroBatch)
	}
	if p.GlobalBatch < 1 {
		return planErr(-1, -1, "global_batch is %d, want at least 1", p.GlobalBatch)
	}
	d := len(p.Stages[0].Replicas)
	next := 0
	for i := range p.Stages {
		st := &p.Stages[i]
		switch {
		case st.FirstLayer > next && i == 0:
			return planErr(i, -1, "first_layer is %d: the first stage must start at layer 0", st.FirstLayer)
		case st.FirstLayer > next:
			return planErr(i, -1, "first_layer %d leaves layers %d..%d unassigned (stage %d ends at layer %d)",
				st.FirstLayer, next, st.FirstLayer-1, i-1, next-1)
		case st.FirstLayer < next:
			return planErr(i, -1, "first_layer %d overlaps stage %d, which ends at layer %d", st.FirstLayer, i-1, next-1)
		}
		if st.LastLayer < st.FirstLayer {
			return planErr(i, -1, "last_layer %d is before first_layer %d", st.LastLayer, st.FirstLayer)
		}
		next = st.LastLayer + 1
		if len(st.Replicas) == 0 {
			return planErr(i, -1, "no replicas")
		}
		if len(st.Replicas) != d {
			return planErr(i, -1, "%d replicas, but stage 0 has %d: every stage needs the same number (the data-parallel degree)",
				len(st.Replicas), d)
		}
		for j := range st.Replicas {
			if err := checkReplica(i, j, &st.Replicas[j]); err != nil {
				return err
			}
		}
	}
	if p.GlobalBatch < p.MicroBatch*d {
		return planErr(-1, -1, "global_batch %d is less than micro_batch %d × %d replicas: some pipeline would get no samples",
			p.GlobalBatch, p.MicroBatch, d)
	}
	return nil
}

func checkReplica(i, j int, r *Replica) error {
	switch {
	case r.GPU == "":
		return planErr(i, j, "gpu is empty")
	case r.TP < 1:
		return planErr(i, j, "tp is %d, want at least 1", r.TP)
	case r.GPUsPerNode < 1:
		return planErr(i, j, "gpus_per_node is %d: say how many GPUs the replica's machine has", r.GPUsPerNode)
	case r.TP > r.GPUsPerNode:
		return planErr(i, j, "tp %d exceeds gpus_per_node %d: a replica's tensor-parallel group must fit on one machine",
			r.TP, r.GPUsPerNode)
	case r.Zone == "":
		return planErr(i, j, "zone is empty: the simulator needs it for links and egress")
	case r.USDPerGPUHour < 0:
		return planErr(i, j, "usd_per_gpu_hour is negative (%g)", r.USDPerGPUHour)
	}
	return nil
}
