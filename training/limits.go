package training

import (
	"fmt"

	"github.com/schooner-ml/schooner/internal/defaults"
)

// Limits are the largest job a control plane accepts: policy, not physics, so an operator
// sets them (`schooner worker control --limits FILE`, `schooner dev --limits FILE`) and
// every job is checked against them by the workflow itself, whatever started it. They stop a
// typo or a hostile spec from holding GPUs for a job that cannot be meant (a billion
// iterations, a million-token sequence) before money is spent. Zero fields take
// DefaultLimits'.
type Limits struct {
	// MaxIterations bounds spec.iterations.
	MaxIterations int64 `json:"max_iterations,omitempty" yaml:"max_iterations,omitempty"`
	// MaxGlobalBatch bounds spec.global_batch (samples per iteration).
	MaxGlobalBatch int `json:"max_global_batch,omitempty" yaml:"max_global_batch,omitempty"`
	// MaxSeqLen bounds spec.seq_len (tokens per sample).
	MaxSeqLen int `json:"max_seq_len,omitempty" yaml:"max_seq_len,omitempty"`
	// MaxModelParams bounds the parameters of a model given by its dimensions.
	MaxModelParams float64 `json:"max_model_params,omitempty" yaml:"max_model_params,omitempty"`
	// MaxGPUs bounds resources.max_gpus, and is the cap of a job that sets none.
	MaxGPUs int `json:"max_gpus,omitempty" yaml:"max_gpus,omitempty"`
	// MaxSpecBytes bounds the spec's JSON encoding (commands, environment, lists).
	MaxSpecBytes int `json:"max_spec_bytes,omitempty" yaml:"max_spec_bytes,omitempty"`
}

// DefaultLimits accept every job the bundled examples and profiles describe with room to
// spare: ten million iterations, a global batch of a million samples, 256k-token sequences,
// models up to two trillion parameters, 4,096 GPUs and a 64 KiB spec.
var DefaultLimits = Limits{
	MaxIterations:  10_000_000,
	MaxGlobalBatch: 1 << 20,
	MaxSeqLen:      1 << 18,
	MaxModelParams: 2e12,
	MaxGPUs:        4096,
	MaxSpecBytes:   64 << 10,
}

// WithDefaults fills the zero fields from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	defaults.Positive(&l.MaxIterations, d.MaxIterations)
	defaults.Positive(&l.MaxGlobalBatch, d.MaxGlobalBatch)
	defaults.Positive(&l.MaxSeqLen, d.MaxSeqLen)
	defaults.Positive(&l.MaxModelParams, d.MaxModelParams)
	defaults.Positive(&l.MaxGPUs, d.MaxGPUs)
	defaults.Positive(&l.MaxSpecBytes, d.MaxSpecBytes)
	return l
}

// String names every limit, for errors and start-up logs.
func (l Limits) String() string {
	return fmt.Sprintf("iterations ≤ %d, global_batch ≤ %d, seq_len ≤ %d, model ≤ %.3g parameters, max_gpus ≤ %d, spec ≤ %d bytes",
		l.MaxIterations, l.MaxGlobalBatch, l.MaxSeqLen, l.MaxModelParams, l.MaxGPUs, l.MaxSpecBytes)
}
