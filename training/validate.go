package training

import (
	"encoding/json"
	"github.com/schooner-ml/schooner/internal/specfile"
	"maps"
	"slices"
	"strings"

	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/planner"
)

// FieldError is one problem with a spec, named by its field's path ("checkpoint.every").
type FieldError = specfile.FieldError

// ValidationError lists every problem of a spec at once.
type ValidationError = specfile.ValidationError

// Validate checks the spec within DefaultLimits and returns a *ValidationError naming every
// bad field, or nil. Call it on WithDefaults' result: empty optional fields are errors here.
func (s Spec) Validate() error { return s.ValidateWithin(DefaultLimits) }

// ValidateWithin is Validate with an operator's limits (zero fields: the defaults).
func (s Spec) ValidateWithin(lim Limits) error {
	lim = lim.WithDefaults()
	v := &validator{lim: lim}
	if s.Name == "" {
		v.add("name", "required")
	} else {
		v.CheckName(s.Name)
	}
	v.model(s.Model)
	if s.GlobalBatch < 1 {
		v.add("global_batch", "must be ≥ 1")
	} else if s.GlobalBatch > lim.MaxGlobalBatch {
		v.add("global_batch", "%d is over this control plane's limit of %d", s.GlobalBatch, lim.MaxGlobalBatch)
	}
	if s.SeqLen < 0 {
		v.add("seq_len", "must be ≥ 0 (0: the model's default)")
	} else if s.SeqLen > lim.MaxSeqLen {
		v.add("seq_len", "%d is over this control plane's limit of %d", s.SeqLen, lim.MaxSeqLen)
	}
	if s.Iterations < 1 {
		v.add("iterations", "must be ≥ 1")
	} else if s.Iterations > lim.MaxIterations {
		v.add("iterations", "%d is over this control plane's limit of %d", s.Iterations, lim.MaxIterations)
	}
	if n := specBytes(s); n > lim.MaxSpecBytes {
		v.add("spec", "%d bytes as JSON, over this control plane's limit of %d (long commands, environments or lists)", n, lim.MaxSpecBytes)
	}
	if s.Objective != ObjectiveThroughput && s.Objective != ObjectiveCost {
		v.add("objective", "must be one of %s, %s (got %q)", ObjectiveThroughput, ObjectiveCost, s.Objective)
	}
	if s.Budget.USDPerHour < 0 {
		v.add("budget.usd_per_hour", "must be ≥ 0 (0: no cap)")
	}
	if s.Budget.TotalUSD < 0 {
		v.add("budget.total_usd", "must be ≥ 0 (0: no cap)")
	}
	if s.Deadline != "" {
		if _, err := ParseDeadline(s.Deadline); err != nil {
			v.add("deadline", "%v", err)
		}
	}
	v.resources(s.Resources)
	s.Spot.Check("spot", v.Record)
	v.checkpoint(s.Checkpoint, s.Iterations)
	v.trainer(s.Trainer)
	return v.Err("training")
}

// Problems returns the field errors of err when it is a *ValidationError.
func Problems(err error) []FieldError { return specfile.Problems(err) }

type validator struct {
	specfile.Collector
	lim Limits
}

func (v *validator) add(field, format string, args ...any) { v.Add(field, format, args...) }

// specBytes is the size of the spec's JSON encoding, what the workflow carries.
func specBytes(s Spec) int {
	b, err := json.Marshal(s)
	if err != nil {
		return 0
	}
	return len(b)
}

func (v *validator) model(m Model) {
	dims := m.Layers != 0 || m.Hidden != 0 || m.Heads != 0 || m.FFN != 0 || m.Vocab != 0
	switch {
	case m.Name != "" && dims:
		v.add("model", "give a built-in name or dimensions, not both")
	case m.Name != "":
		if _, ok := planner.ResolveModelName(m.Name); !ok {
			v.add("model.name", "unknown model %q; known: %s", m.Name, strings.Join(planner.BuiltinModels(), ", "))
		}
	case !dims:
		v.add("model", "required: a built-in name (%s) or layers, hidden and heads", strings.Join(planner.BuiltinModels(), ", "))
	default:
		for _, f := range []struct {
			name string
			val  int
			must bool
		}{{"layers", m.Layers, true}, {"hidden", m.Hidden, true}, {"heads", m.Heads, true}, {"ffn", m.FFN, true}, {"vocab", m.Vocab, true}} {
			if f.val < 0 || (f.must && f.val == 0) {
				v.add("model."+f.name, "must be ≥ 1 (a model given by its dimensions needs layers, hidden, heads, ffn and vocab)")
			}
		}
		if m.Hidden > 0 && m.Heads > 0 && m.Hidden%m.Heads != 0 {
			v.add("model.heads", "must divide model.hidden (%d)", m.Hidden)
		}
		if p := m.params(); p > v.lim.MaxModelParams {
			v.add("model", "about %.3g parameters, over this control plane's limit of %.3g", p, v.lim.MaxModelParams)
		}
	}
}

func (v *validator) resources(r Resources) {
	r.Check(v.Record)
	if r.MaxGPUs > v.lim.MaxGPUs {
		v.add("resources.max_gpus", "%d is over this control plane's limit of %d", r.MaxGPUs, v.lim.MaxGPUs)
	}
}

func (v *validator) checkpoint(c Checkpoint, iterations int64) {
	if c.Every < 1 {
		v.add("checkpoint.every", "must be ≥ 1")
	} else if iterations >= 1 && c.Every > iterations {
		v.add("checkpoint.every", "must be ≤ iterations (%d), or the job never checkpoints", iterations)
	}
	if c.Store == "" {
		v.add("checkpoint.store", "required: an object store that outlives the machines (s3://bucket/prefix or file:///abs/dir)")
		return
	}
	if err := checkStoreURL(c.Store); err != nil {
		v.add("checkpoint.store", "%v", err)
	}
}

// checkStoreURL checks a store URL by checkpoint/store's own rules (store.ParseURL), which
// reach neither the network nor the disk: a spec that validates does not fail on the node for
// its store URL.
func checkStoreURL(raw string) error {
	_, err := store.ParseURL(raw)
	return err
}

func (v *validator) trainer(t Trainer) {
	switch t.Kind {
	case TrainerSim:
		if len(t.Command) > 0 {
			v.add("trainer.command", "only for trainer.kind command (kind is sim)")
		}
	case TrainerCommand:
		if len(t.Command) == 0 || strings.TrimSpace(t.Command[0]) == "" {
			v.add("trainer.command", "required when trainer.kind is command")
		}
	default:
		v.add("trainer.kind", "must be one of %s, %s (got %q)", TrainerSim, TrainerCommand, t.Kind)
	}
	//workflowcheck:ignore the keys are sorted
	for _, k := range slices.Sorted(maps.Keys(t.Env)) {
		if strings.HasPrefix(k, "SCHOONER_") {
			v.add("trainer.env."+k, "reserved: SCHOONER_* variables are set by schooner")
		}
	}
}
