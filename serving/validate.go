package serving

import (
	"maps"
	"slices"
	"strings"

	"github.com/schooner-ml/schooner/internal/specfile"
)

// Bounds of a deployment this control plane accepts; policy, documented in docs/serving.md.
const (
	MaxStages     = 64
	MaxReplicas   = 64
	MaxBatchLimit = 1024
	MaxContext    = 1 << 18
	MaxQueue      = 1 << 16
	MaxKVSwapGiB  = 4096
)

// FieldError and ValidationError are the spec files' (specfile) problem types.
type (
	FieldError      = specfile.FieldError
	ValidationError = specfile.ValidationError
)

// Problems returns the field errors of err when it is a *ValidationError.
func Problems(err error) []FieldError { return specfile.Problems(err) }

// Validate checks a spec after WithDefaults and names every bad field.
func (s Spec) Validate() error {
	var c specfile.Collector
	c.CheckName(s.Name)
	checkModel(&c, s.Model, s.Stages)
	bounded := func(field string, v, lo, hi int) {
		if v < lo || v > hi {
			c.Add(field, "must be between %d and %d (got %d)", lo, hi, v)
		}
	}
	bounded("stages", s.Stages, 1, MaxStages)
	bounded("replicas", s.Replicas, 1, MaxReplicas)
	checkPools(&c, s)
	bounded("max_batch", s.MaxBatch, 1, MaxBatchLimit)
	bounded("max_context", s.MaxContext, 16, MaxContext)
	bounded("queue", s.Queue, 1, MaxQueue)
	s.Resources.Check(c.Record)
	s.Spot.Check("spot", c.Record)
	if s.KVReplication != ReplicationOn && s.KVReplication != ReplicationOff {
		c.Add("kv_replication", "must be %s or %s (got %q)", ReplicationOn, ReplicationOff, s.KVReplication)
	}
	if !(s.KVSwapGiB >= 0 && s.KVSwapGiB <= MaxKVSwapGiB) {
		c.Add("kv_swap_gib", "must be between 0 (off) and %d GiB of host memory per stage (got %g)", MaxKVSwapGiB, s.KVSwapGiB)
	}
	if s.Latency.TTFTMillis < 0 || s.Latency.TPOTMillis < 0 {
		c.Add("latency", "targets must be ≥ 0 ms (0: none)")
	}
	return c.Err("serving")
}

// checkModel accepts a built-in name or full dimensions, and a depth the layers can fill.
func checkModel(c *specfile.Collector, m Model, stages int) {
	dims := m.Layers != 0 || m.Hidden != 0 || m.Heads != 0 || m.KVHeads != 0 || m.FFN != 0 || m.Vocab != 0
	switch {
	case m.Name != "" && dims:
		c.Add("model", "give a built-in name or dimensions, not both")
		return
	case m.Name != "":
		if _, ok := BuiltinModels[m.Name]; !ok {
			c.Add("model.name", "unknown model %q; built in: %s", m.Name, strings.Join(slices.Sorted(maps.Keys(BuiltinModels)), ", "))
			return
		}
	case !dims:
		c.Add("model", "required: a built-in name (%s) or layers, hidden, heads, kv_heads, ffn and vocab",
			strings.Join(slices.Sorted(maps.Keys(BuiltinModels)), ", "))
		return
	default:
		for _, f := range []struct {
			name string
			val  int
		}{{"layers", m.Layers}, {"hidden", m.Hidden}, {"heads", m.Heads}, {"kv_heads", m.KVHeads}, {"ffn", m.FFN}, {"vocab", m.Vocab}} {
			if f.val < 1 {
				c.Add("model."+f.name, "must be ≥ 1")
			}
		}
		if m.Heads > 0 && m.Hidden%m.Heads != 0 {
			c.Add("model.heads", "must divide model.hidden (%d)", m.Hidden)
		}
		if m.KVHeads > 0 && m.Heads%m.KVHeads != 0 {
			c.Add("model.kv_heads", "must divide model.heads (%d): grouped-query attention shares each KV head among heads/kv_heads", m.Heads)
		}
	}
	if d := m.Dims(); stages > d.Layers && d.Layers > 0 {
		c.Add("stages", "%d stages for a %d-layer model: every stage needs a layer", stages, d.Layers)
	}
}
