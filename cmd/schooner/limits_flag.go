package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/schooner-ml/schooner/training"
)

// limitsFile is a --limits flag: a YAML or JSON file of training.Limits, read when the flag
// is set, so a typo in the file stops the command at start instead of admitting every job.
type limitsFile struct {
	path   string
	limits *training.Limits
}

func (f *limitsFile) String() string { return f.path }
func (f *limitsFile) Type() string   { return "file" }

// Set reads the file and rejects unknown fields and negative limits.
func (f *limitsFile) Set(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var lim training.Limits
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&lim); err != nil {
		return fmt.Errorf("%s: %w (fields: max_iterations, max_global_batch, max_seq_len, max_model_params, max_gpus, max_spec_bytes)", path, err)
	}
	if lim.MaxIterations < 0 || lim.MaxGlobalBatch < 0 || lim.MaxSeqLen < 0 || lim.MaxModelParams < 0 || lim.MaxGPUs < 0 || lim.MaxSpecBytes < 0 {
		return fmt.Errorf("%s: limits must not be negative (0 or absent: the default)", path)
	}
	f.path, *f.limits = path, lim
	return nil
}
