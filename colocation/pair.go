package colocation

import (
	"errors"
	"fmt"
	"time"
)

// Program is one side of a pair: an unmodified program (a command line, e.g. `python3
// train.py`), run as is with the launch shim preloaded.
type Program struct {
	Command []string `json:"command"`
	Env     []string `json:"env,omitempty"` // KEY=VALUE added to the node's environment
	Dir     string   `json:"dir,omitempty"`
}

// MPSMode says whether the pair runs under an MPS daemon of its own: two processes' kernels run
// at the same time only under MPS; without it the driver time-slices them and the rule only
// keeps BE kernels from queueing in the HP side's way.
type MPSMode string

// Auto uses MPS where nvidia-cuda-mps-control is installed.
const (
	MPSAuto MPSMode = "auto"
	MPSOn   MPSMode = "on"
	MPSOff  MPSMode = "off"
)

// Pair is one colocation: the latency-critical (HP) and best-effort (BE) programs, the
// runtime's parameters, and where kernel profiles persist between runs.
type Pair struct {
	HP     Program `json:"hp"`
	BE     Program `json:"be"`
	Params Params  `json:"params"`
	MPS    MPSMode `json:"mps,omitempty"`
	// ProfileDir holds hp.tsv and be.tsv, the kernel profiles each side reads at start and
	// writes at exit, so a second run knows every kernel from its first launch.
	ProfileDir string `json:"profile_dir,omitempty"`
	// BEDelay starts the BE side this long after the HP side (its warm-up alone).
	BEDelay time.Duration `json:"be_delay,omitempty"`
	// SMs is the device's SM count when known; 0: the first shim to open the device says.
	SMs int `json:"sms,omitempty"`
	// WholeGEMMs leaves a Python BE program's large matrix products uncut; by default they
	// are cut into pieces of about the current budget (trainer/python/schooner_colocate), the
	// only way a BE GEMM of several ms stops delaying HP kernels by as much.
	WholeGEMMs bool `json:"whole_gemms,omitempty"`
	// BENormalPriority runs the BE side at MPS's normal client priority, as the HP side. By
	// default, under MPS, it runs below normal (CUDA_MPS_CLIENT_PRIORITY=1), meant to have the
	// block scheduler serve the HP side's waiting blocks first. On an H100 HP kernels still
	// waited behind 2 ms of queued BE work (docs/colocation.md).
	BENormalPriority bool `json:"be_normal_priority,omitempty"`
	// BEThreadPercentage, under MPS, limits the BE program to this share of the SMs
	// (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; 0: all of them). cuBLASLt's GEMMs on Hopper are
	// persistent kernels as wide as the SMs they see, too wide for the SM limit beside running HP
	// work however they are cut; seeing fewer SMs, they can run beside it. The cost: BE work
	// never has the whole GPU, even while the HP side is idle.
	BEThreadPercentage int `json:"be_thread_percentage,omitempty"`
}

// WithDefaults fills what was left out: the default parameters (a zero Params is taken as
// unset) and MPS auto.
func (p Pair) WithDefaults() Pair {
	if p.Params == (Params{}) {
		p.Params = DefaultParams()
	}
	if p.MPS == "" {
		p.MPS = MPSAuto
	}
	return p
}

// Validate refuses a pair that cannot run, naming the field.
func (p Pair) Validate() error {
	var errs []error
	if len(p.HP.Command) == 0 || p.HP.Command[0] == "" {
		errs = append(errs, errors.New("hp.command: the latency-critical program's command line is empty"))
	}
	if len(p.BE.Command) == 0 || p.BE.Command[0] == "" {
		errs = append(errs, errors.New("be.command: the best-effort program's command line is empty"))
	}
	if err := p.Params.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("params: %w", err))
	}
	switch p.MPS {
	case MPSAuto, MPSOn, MPSOff:
	default:
		errs = append(errs, fmt.Errorf("mps %q: auto, on or off", p.MPS))
	}
	if p.BEDelay < 0 {
		errs = append(errs, fmt.Errorf("be_delay %s: must not be negative", p.BEDelay))
	}
	if p.SMs < 0 {
		errs = append(errs, fmt.Errorf("sms %d: must not be negative", p.SMs))
	}
	if p.BEThreadPercentage < 0 || p.BEThreadPercentage > 100 {
		errs = append(errs, fmt.Errorf("be_thread_percentage %d: a percentage from 1 to 100 (0: all the SMs)", p.BEThreadPercentage))
	}
	return errors.Join(errs...)
}

// Status is a running pair's progress, as heartbeats and `schooner colocate` show it.
type Status struct {
	Elapsed   time.Duration `json:"elapsed"`
	SMs       int           `json:"sms"`
	HPKernels int64         `json:"hp_kernels"`
	BEKernels int64         `json:"be_kernels"`
	// Slowdown is the last window's HP slowdown (0: no HP kernel in it); MeanSlowdown over the
	// whole run.
	Slowdown     float64       `json:"slowdown"`
	MeanSlowdown float64       `json:"mean_slowdown"`
	Budget       time.Duration `json:"budget"`
	SMLimit      int           `json:"sm_limit"`
	BEState      string        `json:"be_state"`
	BEWaits      int64         `json:"be_waits"`
	BEWaited     time.Duration `json:"be_waited"`
	BEBeside     int64         `json:"be_admitted_beside"`
	BEWaitsBy    WaitReasons   `json:"be_waits_by"`
	Events       []string      `json:"events,omitempty"` // the supervisor's state changes, and exits
}

// WaitReasons counts the BE launches that had to wait (Status.BEWaits), by what first held
// each: it tells a rule that never lets BE work beside the HP side (SMs) from one that has no
// complementary kernel to offer (HP) or a queue at its cap (Budget).
type WaitReasons struct {
	HP     int64 `json:"hp"`     // HP work running that the kernel's bound does not complement
	SMs    int64 `json:"sms"`    // complementary, but over the SMs BE may hold beside HP work
	Budget int64 `json:"budget"` // the queued BE work at its cap
	Paused int64 `json:"paused"` // the BE side throttled or evicted
}

// Result is a finished pair.
type Result struct {
	Status
	HPExit  int    `json:"hp_exit"`
	BEExit  int    `json:"be_exit"` // -1: stopped by the runtime (evicted, or the HP side ended first)
	Evicted bool   `json:"evicted"`
	MPS     bool   `json:"mps"`
	Note    string `json:"note,omitempty"`
	// HPShim and BEShim are each side's launch shim statistics (launches seen by entry point,
	// waits): the evidence that the shim saw every kernel.
	HPShim map[string]any `json:"hp_shim,omitempty"`
	BEShim map[string]any `json:"be_shim,omitempty"`
}
