package planner

import "github.com/schooner-ml/schooner/gpu"

// Pool is GPUs that can be had: one instance type in one zone, how many GPUs of it are
// available, and what a GPU-hour costs. The caller builds pools from cloud offerings (and
// from the instances a job already holds, when replanning).
type Pool struct {
	Provider     string   `json:"provider,omitempty"`
	Region       string   `json:"region"`
	Zone         string   `json:"zone"`
	InstanceType string   `json:"instance_type,omitempty"`
	GPU          gpu.Type `json:"gpu"`
	GPUsPerNode  int      `json:"gpus_per_node"`
	// GPUs available in this pool (a multiple of GPUsPerNode).
	GPUs          int     `json:"gpus"`
	USDPerGPUHour float64 `json:"usd_per_gpu_hour"`
	Spot          bool    `json:"spot"`
}

// Endpoint is where the pool's GPUs sit.
func (p Pool) Endpoint() Endpoint {
	return Endpoint{GPU: p.GPU, GPUsPerNode: p.GPUsPerNode, Zone: p.Zone, Region: p.Region}
}

// Plan is a complete job configuration: P pipeline stages over contiguous layer ranges, each
// with the same number D of data-parallel replicas; each replica is TP GPUs of one type in
// one zone. It is what docs/plan-format.md documents and `schooner plan simulate` reads.
type Plan struct {
	Model       string  `json:"model"`
	GlobalBatch int     `json:"global_batch"`
	MicroBatch  int     `json:"micro_batch"`
	Stages      []Stage `json:"stages"`
}

// Stage is a contiguous range of layers [FirstLayer, LastLayer] and its replicas.
type Stage struct {
	FirstLayer int       `json:"first_layer"`
	LastLayer  int       `json:"last_layer"`
	Replicas   []Replica `json:"replicas"`
}

// Replica is one copy of a stage: TP GPUs of one type on one machine in one zone.
type Replica struct {
	GPU           gpu.Type `json:"gpu"`
	TP            int      `json:"tp"`
	Zone          string   `json:"zone"`
	Region        string   `json:"region"`
	GPUsPerNode   int      `json:"gpus_per_node"`
	InstanceType  string   `json:"instance_type,omitempty"`
	USDPerGPUHour float64  `json:"usd_per_gpu_hour"`
	// Spot is the capacity type of the pool the replica was planned on, so what to buy
	// travels with the plan instead of being guessed back from the price.
	Spot bool `json:"spot,omitempty"`
}

// Endpoint is where the replica's GPUs sit.
func (r Replica) Endpoint() Endpoint {
	return Endpoint{GPU: r.GPU, GPUsPerNode: r.GPUsPerNode, Zone: r.Zone, Region: r.Region}
}

// DP is the data-parallel degree (replicas per stage).
func (p *Plan) DP() int {
	if len(p.Stages) == 0 {
		return 0
	}
	return len(p.Stages[0].Replicas)
}

// GPUs counts every GPU the plan uses.
func (p *Plan) GPUs() int {
	n := 0
	for _, s := range p.Stages {
		for _, r := range s.Replicas {
			n += r.TP
		}
	}
	return n
}

// Microbatches is the number of microbatches each pipeline runs per iteration:
// ceil(global batch / (mbs · D)).
func (p *Plan) Microbatches() int {
	d := p.DP()
	if d == 0 || p.MicroBatch == 0 {
		return 0
	}
	per := p.MicroBatch * d
	return (p.GlobalBatch + per - 1) / per
}

// Estimate is what the simulator predicts for a plan.
type Estimate struct {
	// IterTime = PipelineTime + SyncTime, seconds.
	IterTime     float64 `json:"iter_time_s"`
	PipelineTime float64 `json:"pipeline_time_s"`
	SyncTime     float64 `json:"sync_time_s"`
	// Throughput is iterations per second.
	Throughput float64 `json:"iters_per_s"`
	// USDPerHour is the GPUs' price; USDPerIteration adds the egress of one iteration.
	USDPerHour            float64         `json:"usd_per_hour"`
	USDPerIteration       float64         `json:"usd_per_iteration"`
	EgressUSDPerIteration float64         `json:"egress_usd_per_iteration"`
	Stages                []StageEstimate `json:"stages"`
	// Fits is false when some replica's peak memory exceeds its GPU's memory.
	Fits bool `json:"fits"`
	// Derived is true when any stage used a derived (not measured) compute profile.
	Derived bool `json:"derived"`
}

// StageEstimate is one stage's share.
type StageEstimate struct {
	// Compute is the slowest replica's forward+backward time for one microbatch.
	Compute float64 `json:"compute_s"`
	// Comm is the stage's p2p time per microbatch: activations sent to the next stage plus
	// gradients sent back to the previous one (middle stages pay both).
	Comm float64 `json:"comm_s"`
	// Update is the slowest replica's optimizer step.
	Update float64 `json:"update_s"`
	// PeakMemBytes is the largest peak memory over the stage's replicas; MemLimitBytes the
	// smallest GPU memory among them.
	PeakMemBytes  float64 `json:"peak_mem_bytes"`
	MemLimitBytes float64 `json:"mem_limit_bytes"`
	Fits          bool    `json:"fits"`
}
