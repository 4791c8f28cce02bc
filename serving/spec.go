// Package serving is the contract of an LLM serving deployment (DéjàVu-style), without
// Temporal: the spec a user writes, its defaults and validation, the deployment's status and
// the names and payloads of its workflow and activities. The data path (router, inference
// workers, KV-cache holders) speaks docs/serving-protocol.md; the workflow only sees
// membership, failovers and summaries.
package serving

import "github.com/schooner-ml/schooner/fleet"

// Spec is a serving deployment as a user submits it (examples/serve-*.yaml).
type Spec struct {
	// Name is a label for people; the deployment id is chosen at deploy time.
	Name  string `json:"name" yaml:"name"`
	Model Model  `json:"model" yaml:"model"`
	// Stages is the pipeline depth: the model's layers are split over this many inference
	// workers, one per machine (1 by default).
	Stages int `json:"stages,omitempty" yaml:"stages,omitempty"`
	// Replicas is how many copies of the pipeline serve (1 by default); with PrefillReplicas,
	// the decode (token) pool's replicas.
	Replicas int `json:"replicas,omitempty" yaml:"replicas,omitempty"`
	// PrefillReplicas (0 by default: every replica prefills and decodes its own requests)
	// disaggregates prefill from decode, as DéjàVu's prompt and token pools, vLLM's
	// disaggregated prefill (kv_producer, kv_consumer) and Dynamo's prefill and decode workers
	// do: this many more pipelines, of the same stages, only prefill; each streams a prompt's KV
	// cache layer by layer to the KV-cache holders its decode replica restores from, and the
	// decode replica generates the rest (pools.go).
	PrefillReplicas int             `json:"prefill_replicas,omitempty" yaml:"prefill_replicas,omitempty"`
	Resources       fleet.Resources `json:"resources,omitempty" yaml:"resources,omitempty"`
	// Spot is which capacity the stages may run on (spot by default).
	Spot fleet.SpotPolicy `json:"spot,omitempty" yaml:"spot,omitempty"`
	// MaxBatch bounds the sequences decoded together per stage; MaxContext the tokens of one
	// sequence (prompt and generated).
	MaxBatch   int `json:"max_batch,omitempty" yaml:"max_batch,omitempty"`
	MaxContext int `json:"max_context,omitempty" yaml:"max_context,omitempty"`
	// KVReplication streams every stage's KV cache to the next stage's holder so a lost
	// stage resumes without recomputing ("on" by default; "off" recomputes on failover).
	KVReplication string `json:"kv_replication,omitempty" yaml:"kv_replication,omitempty"`
	// KVSwapGiB turns on microbatch swapping (DéjàVu): each stage admits requests into this
	// much pinned host memory and keeps in its GPU KV pool only the microbatch computing and
	// the next one, swapped in while the other computes, so a stage holds more sequences than
	// its GPU pool (the worker's --swap-host-gib; with several stages the first keeps one step
	// in flight per stage, --inflight; docs/serving.md). 0, the default: off.
	KVSwapGiB float64 `json:"kv_swap_gib,omitempty" yaml:"kv_swap_gib,omitempty"`
	// Latency are the targets the deployment is planned and judged by.
	Latency Latency `json:"latency,omitempty" yaml:"latency,omitempty"`
	// Queue bounds the requests waiting at the router; more get HTTP 429.
	Queue int `json:"queue,omitempty" yaml:"queue,omitempty"`
}

// Model names a built-in model of the inference worker (schooner_serve: tiny, llama-1b,
// llama-8b) or gives a Llama-style decoder's dimensions; Seed draws its random weights, so
// every stage and every replacement builds the same model without downloads.
type Model struct {
	Name    string `json:"name,omitempty" yaml:"name,omitempty"`
	Layers  int    `json:"layers,omitempty" yaml:"layers,omitempty"`
	Hidden  int    `json:"hidden,omitempty" yaml:"hidden,omitempty"`
	Heads   int    `json:"heads,omitempty" yaml:"heads,omitempty"`
	KVHeads int    `json:"kv_heads,omitempty" yaml:"kv_heads,omitempty"`
	FFN     int    `json:"ffn,omitempty" yaml:"ffn,omitempty"`
	Vocab   int    `json:"vocab,omitempty" yaml:"vocab,omitempty"`
	Seed    int64  `json:"seed,omitempty" yaml:"seed,omitempty"`
}

// Latency targets, in milliseconds (0: none).
type Latency struct {
	// TTFTMillis is the time to the first token; TPOTMillis the time per output token after.
	TTFTMillis float64 `json:"ttft_ms,omitempty" yaml:"ttft_ms,omitempty"`
	TPOTMillis float64 `json:"tpot_ms,omitempty" yaml:"tpot_ms,omitempty"`
}

// Defaults WithDefaults fills in.
const (
	DefaultMaxBatch   = 32
	DefaultMaxContext = 4096
	DefaultQueue      = 256
	ReplicationOn     = "on"
	ReplicationOff    = "off"
)

// BuiltinModels are the inference worker's named configurations (schooner_serve/config.py:
// the same dimensions; the node side passes the name): tiny runs on a CPU (byte-level
// vocabulary of 256 bytes and 4 specials), llama-1b and llama-8b have Llama 3's shapes.
var BuiltinModels = map[string]Model{
	"tiny":     {Layers: 4, Hidden: 64, Heads: 4, KVHeads: 2, FFN: 176, Vocab: 260},
	"llama-1b": {Layers: 16, Hidden: 2048, Heads: 32, KVHeads: 8, FFN: 8192, Vocab: 128256},
	"llama-8b": {Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, FFN: 14336, Vocab: 128256},
}

// WithDefaults returns the spec with the documented defaults filled in.
func (s Spec) WithDefaults() Spec {
	if s.Stages == 0 {
		s.Stages = 1
	}
	if s.Replicas == 0 {
		s.Replicas = 1
	}
	if s.Spot == "" {
		s.Spot = fleet.SpotOnly
	}
	if s.MaxBatch == 0 {
		s.MaxBatch = DefaultMaxBatch
	}
	if s.MaxContext == 0 {
		s.MaxContext = DefaultMaxContext
	}
	if s.KVReplication == "" {
		s.KVReplication = ReplicationOn
	}
	if s.Queue == 0 {
		s.Queue = DefaultQueue
	}
	return s
}

// Dims are the model's dimensions: the built-in configuration's, or the spec's own.
func (m Model) Dims() Model {
	if b, ok := BuiltinModels[m.Name]; ok {
		b.Name, b.Seed = m.Name, m.Seed
		return b
	}
	return m
}
