package serve

import (
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/gpu"
)

// Mode is how prompt and token work share GPUs.
type Mode string

const (
	// Colocated: every replica prefills and decodes (prefills first, holding the decodes).
	Colocated Mode = "colocated"
	// Disaggregated: a prompt pool prefills and streams the KV cache to a token pool
	// (DéjàVu's prompt–token disaggregation).
	Disaggregated Mode = "disaggregated"
)

// Pool is one pool of identical pipeline replicas.
type Pool struct {
	Role Role `json:"role"`
	// Stages is the pipeline depth D; TP the tensor-parallel degree of each stage, inside
	// one machine.
	Stages   int `json:"stages"`
	TP       int `json:"tp"`
	Replicas int `json:"replicas"`
	// GPUs is the GPUs the replicas use; Instances the machines bought for them (their GPUs
	// may be more when a replica does not fill a machine).
	GPUs      int `json:"gpus"`
	Instances int `json:"instances"`
	// MaxBatch is the sequences a replica decodes at once and PrefillBatch the prompts it
	// prefills at once, as memory and the token budget allow.
	MaxBatch     int `json:"max_batch,omitempty"`
	PrefillBatch int `json:"prefill_batch,omitempty"`
	// Capacity is spot, on-demand, or mixed when spot capacity ran short.
	Capacity   string      `json:"capacity"`
	USDPerHour float64     `json:"usd_per_hour"`
	Placements []Placement `json:"placements"`
}

// Latency are seconds: TTFT is time to first token, TPOT a request's mean time per output
// token after the first.
type Latency struct {
	TTFTP50 float64 `json:"ttft_p50_s"`
	TTFTP99 float64 `json:"ttft_p99_s"`
	TPOTP50 float64 `json:"tpot_p50_s"`
	TPOTP99 float64 `json:"tpot_p99_s"`
	// Requests is how many requests the percentiles are over.
	Requests int `json:"requests"`
}

// Plan is one configuration and what it is estimated to do.
type Plan struct {
	Mode            Mode     `json:"mode"`
	GPU             gpu.Type `json:"gpu"`
	GPUsPerInstance int      `json:"gpus_per_instance"`
	Pools           []Pool   `json:"pools"`
	// GPUs are every GPU bought; Instances every machine.
	GPUs       int     `json:"gpus"`
	Instances  int     `json:"instances"`
	USDPerHour float64 `json:"usd_per_hour"`
	// USDPerMTokens is USD per million generated tokens at the requested rate.
	USDPerMTokens float64 `json:"usd_per_million_tokens"`
	// CapacityTokensPerS is the most generated tokens/s the configuration sustains with
	// decode iterations within the TPOT target (the queueing model's), and Utilization the
	// requested load's share of it.
	CapacityTokensPerS float64 `json:"capacity_tokens_per_s"`
	Utilization        float64 `json:"utilization"`
	// Simulated are the discrete-event simulation's percentiles.
	Simulated Latency `json:"simulated"`
	// DejaVuTokenGPUs is DéjàVu's D_t for this plan's GPUs (disaggregated plans): how many of
	// them the formula would give the token pool, to compare with what the planner chose.
	DejaVuTokenGPUs float64 `json:"dejavu_token_gpus,omitempty"`
	// Spot says some capacity is spot: it may be reclaimed (with a notice of two minutes on
	// AWS, thirty seconds on GCP), and serving on it relies on failover.
	Spot bool `json:"spot"`
}

// Result is the ranked plans and how they were found.
type Result struct {
	// Plans meet the targets in simulation, cheapest first, then the lower p99 against the
	// targets.
	Plans       []Plan      `json:"plans"`
	Targets     Targets     `json:"targets"`
	Assumptions Assumptions `json:"assumptions"`
	// Considered is the layouts the queueing model scored, Simulated the simulations run.
	Considered int           `json:"considered"`
	Simulated  int           `json:"simulated"`
	Elapsed    time.Duration `json:"elapsed_ns"`
}

// capacityOf names the capacity of placements: spot, on-demand or mixed.
func capacityOf(ps []Placement) string {
	var spot, od bool
	for _, p := range ps {
		if p.Capacity == cloud.Spot {
			spot = true
		} else {
			od = true
		}
	}
	switch {
	case spot && od:
		return "mixed"
	case spot:
		return string(cloud.Spot)
	default:
		return string(cloud.OnDemand)
	}
}
