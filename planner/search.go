package planner

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/schooner-ml/schooner/gpu"
)

// Objective is what Search optimises.
type Objective string

const (
	// MaxThroughput maximises iterations per second, optionally under MaxUSDPerIteration.
	MaxThroughput Objective = "throughput"
	// MinCost minimises USD per iteration, optionally above MinItersPerSec.
	MinCost Objective = "cost"
)

// DefaultTopK is how many plans Search returns when Request.TopK is zero.
const DefaultTopK = 5

// Request is one planning question: a model, the network it would run on, the GPUs that can
// be had, the global batch and what to optimise.
type Request struct {
	Model   *ModelProfile
	Network *Network
	Pools   []Pool
	// GlobalBatch is the number of samples per iteration, fixed by the user.
	GlobalBatch int
	// Objective defaults to MaxThroughput.
	Objective Objective
	// MaxUSDPerIteration bounds the cost of throughput plans; 0 means no bound.
	MaxUSDPerIteration float64
	// MinItersPerSec bounds the throughput of cost plans from below; 0 means no bound.
	MinItersPerSec float64
	// MicroBatches are the micro-batch sizes to consider; empty means every profiled one.
	MicroBatches []int
	// TopK is how many distinct plans to return, the best included; 0 means DefaultTopK.
	TopK int

	// sim, when set, is a prepared simulator of Model on Network (the Replanner keeps one
	// per model and network so NewSim's tables are built once).
	sim *Sim
	// preferred pools come first among pools of one endpoint and price, so that a replan
	// keeps the GPUs a job already holds.
	preferred map[poolKey]bool
	// exactZones keeps every zone its own class whatever the size (tests compare H6 with it).
	exactZones bool
}

// Result is what Search found.
type Result struct {
	// Best is the best plan for the objective.
	Best Candidate `json:"best"`
	// Next are up to TopK-1 further distinct plans, best first: good alternatives the search
	// met within a few per cent of the best (it prunes the rest), not a full ranking.
	Next []Candidate `json:"next,omitempty"`
	// Rejected are the main alternatives the search turned down, and why.
	Rejected []Rejection `json:"rejected,omitempty"`
	// Evaluated counts the partial and complete plans the search scored.
	Evaluated int `json:"evaluated"`
	// Elapsed is the wall time of the search.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Candidate is a plan with the simulator's estimate of it.
type Candidate struct {
	Plan     Plan     `json:"plan"`
	Estimate Estimate `json:"estimate"`
}

// Rejection reasons.
const (
	RejectOOM           = "oom"
	RejectBudget        = "budget"
	RejectMinThroughput = "min-throughput"
	RejectNetwork       = "network"
	RejectCapacity      = "capacity"
)

// Rejection is an alternative the search turned down: a short summary of the plan (or the
// family of plans), the reason (one of the Reject constants) and the numbers behind it.
type Rejection struct {
	Summary string `json:"summary"`
	Reason  string `json:"reason"`
	Detail  string `json:"detail"`
}

// ErrNoPlan is wrapped by every error that says no plan satisfies the request (as opposed
// to a malformed request).
var ErrNoPlan = errors.New("no feasible plan")

// Search finds the best plan for req: the pipeline split (stage boundaries chosen for the
// GPUs of each stage, not evenly), the data-parallel degree, the GPU type, TP degree and
// zone of every stage, and the micro-batch size. Every returned plan is estimated by the
// simulator and fits in memory. Up to mergeRegionsAbove GPUs the best plan is the best of
// the space (all replicas of a stage at one endpoint); above, zones and machine sizes of a
// region are merged as in Sailor and the search is a heuristic. See search_dp.go.
//
// Errors wrapping ErrNoPlan mean the request is sound but nothing satisfies it; they say
// why (memory, GPUs, budget or throughput floor) with the nearest achievable numbers.
func Search(req Request) (*Result, error) {
	start := time.Now()
	s, err := newSearch(req)
	if err != nil {
		return nil, err
	}
	res, err := s.run()
	if err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

func (o Objective) valid() bool { return o == MaxThroughput || o == MinCost }

// normalise fills defaults and checks what needs no profile.
func (req *Request) normalise() error {
	if req.Objective == "" {
		req.Objective = MaxThroughput
	}
	if !req.Objective.valid() {
		return fmt.Errorf("unknown objective %q: want %q or %q", req.Objective, MaxThroughput, MinCost)
	}
	if req.Model == nil || req.Model.NumLayers() == 0 {
		name := ""
		if req.Model != nil {
			name = req.Model.Name
		}
		if name == "" {
			return errors.New("no model profile: load one (planner/profiles) or build one with BuildModel")
		}
		return fmt.Errorf("model %q has no layers in its profile", name)
	}
	if len(req.Model.Compute) == 0 {
		return fmt.Errorf("model %q has no compute profile for any GPU", req.Model.Name)
	}
	if req.Network == nil {
		return errors.New("no network profile: use DefaultNetwork() or profiles.LoadNetwork")
	}
	if len(req.Pools) == 0 {
		return errors.New("no GPU pools offered: nothing to plan on")
	}
	if req.GlobalBatch < 1 {
		return fmt.Errorf("global batch is %d, want at least 1", req.GlobalBatch)
	}
	if req.MaxUSDPerIteration < 0 || math.IsNaN(req.MaxUSDPerIteration) {
		return fmt.Errorf("max USD per iteration is %g, want 0 (no bound) or more", req.MaxUSDPerIteration)
	}
	if req.MinItersPerSec < 0 || math.IsNaN(req.MinItersPerSec) {
		return fmt.Errorf("min iterations per second is %g, want 0 (no bound) or more", req.MinItersPerSec)
	}
	if req.TopK <= 0 {
		req.TopK = DefaultTopK
	}
	for _, b := range req.MicroBatches {
		if b < 1 {
			return fmt.Errorf("micro-batch size %d, want at least 1", b)
		}
	}
	return nil
}

// profiledGPUTypes lists the GPU types the model has a compute profile for, as gpuTypeList
// words them.
func profiledGPUTypes(m *ModelProfile) string {
	var names []string
	for g, c := range m.Compute {
		if c != nil && len(c.Times) > 0 {
			names = append(names, string(g))
		}
	}
	return gpuTypeList(names)
}

// offeredGPUTypes lists the GPU types of the pools, each once, as gpuTypeList words them.
func offeredGPUTypes(pools []Pool) string {
	seen := map[gpu.Type]bool{}
	var names []string
	for _, p := range pools {
		if !seen[p.GPU] {
			seen[p.GPU] = true
			names = append(names, string(p.GPU))
		}
	}
	return gpuTypeList(names)
}

// gpuTypeList words GPU type names for an error message: sorted, so the message does not
// depend on map or pool order, comma-separated, and "none" for no names.
func gpuTypeList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
