package training

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/cloud"
)

func validSpec() Spec {
	return Spec{
		Name: "job-1", Model: Model{Name: "OPT-350"}, GlobalBatch: 32, Iterations: 100,
		Checkpoint: Checkpoint{Every: 10, Store: "file:///tmp/store"},
	}.WithDefaults()
}

func TestWithDefaults(t *testing.T) {
	s := Spec{}.WithDefaults()
	assert.Equal(t, ObjectiveThroughput, s.Objective)
	assert.Equal(t, SpotOnly, s.Spot)
	assert.Equal(t, TrainerSim, s.Trainer.Kind)
	kept := Spec{Objective: ObjectiveCost, Spot: OnDemandOnly, Trainer: Trainer{Kind: TrainerCommand}}.WithDefaults()
	assert.Equal(t, ObjectiveCost, kept.Objective)
	assert.Equal(t, OnDemandOnly, kept.Spot)
	assert.Equal(t, TrainerCommand, kept.Trainer.Kind)
}

func TestValidateNamesTheField(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Spec)
		field  string
		says   string
	}{
		{"valid", func(*Spec) {}, "", ""},
		{"dimensions", func(s *Spec) { s.Model = Model{Layers: 4, Hidden: 64, Heads: 4, FFN: 256, Vocab: 1000} }, "", ""},
		{"dimensions without ffn", func(s *Spec) { s.Model = Model{Layers: 4, Hidden: 64, Heads: 4, Vocab: 1000} }, "model.ffn", "≥ 1"},
		{"dimensions without vocab", func(s *Spec) { s.Model = Model{Layers: 4, Hidden: 64, Heads: 4, FFN: 256} }, "model.vocab", "≥ 1"},
		{"model over the limit", func(s *Spec) { s.Model = Model{Layers: 1000, Hidden: 65536, Heads: 64, FFN: 262144, Vocab: 1000} }, "model", "limit"},
		{"iterations over the limit", func(s *Spec) { s.Iterations = DefaultLimits.MaxIterations + 1 }, "iterations", "limit of 10000000"},
		{"global batch over the limit", func(s *Spec) { s.GlobalBatch = DefaultLimits.MaxGlobalBatch + 1 }, "global_batch", "limit"},
		{"seq len over the limit", func(s *Spec) { s.SeqLen = DefaultLimits.MaxSeqLen + 1 }, "seq_len", "limit"},
		{"max gpus over the limit", func(s *Spec) { s.Resources.MaxGPUs = DefaultLimits.MaxGPUs + 1 }, "resources.max_gpus", "limit"},
		{"spec over the limit", func(s *Spec) { s.Trainer.Env = map[string]string{"BIG": strings.Repeat("x", 70<<10)} }, "spec", "bytes"},
		{"missing name", func(s *Spec) { s.Name = "" }, "name", "required"},
		{"bad name", func(s *Spec) { s.Name = "My_Job" }, "name", "lowercase"},
		{"unknown model", func(s *Spec) { s.Model.Name = "X" }, "model.name", `unknown model "X"; known: `},
		{"no model", func(s *Spec) { s.Model = Model{} }, "model", "required"},
		{"both model forms", func(s *Spec) { s.Model.Layers = 3 }, "model", "not both"},
		{"heads divide hidden", func(s *Spec) { s.Model = Model{Layers: 4, Hidden: 65, Heads: 4, FFN: 256, Vocab: 1000} }, "model.heads", "divide"},
		{"zero hidden", func(s *Spec) { s.Model = Model{Layers: 4, Heads: 4, FFN: 256, Vocab: 1000} }, "model.hidden", "≥ 1"},
		{"batch", func(s *Spec) { s.GlobalBatch = 0 }, "global_batch", "≥ 1"},
		{"seq len", func(s *Spec) { s.SeqLen = -1 }, "seq_len", "≥ 0"},
		{"iterations", func(s *Spec) { s.Iterations = 0 }, "iterations", "≥ 1"},
		{"objective", func(s *Spec) { s.Objective = "speed" }, "objective", "throughput, cost"},
		{"hourly budget", func(s *Spec) { s.Budget.USDPerHour = -1 }, "budget.usd_per_hour", "≥ 0"},
		{"total budget", func(s *Spec) { s.Budget.TotalUSD = -1 }, "budget.total_usd", "≥ 0"},
		{"deadline garbage", func(s *Spec) { s.Deadline = "tomorrow" }, "deadline", "neither a duration"},
		{"deadline negative", func(s *Spec) { s.Deadline = "-1h" }, "deadline", "positive"},
		{"deadline rfc3339", func(s *Spec) { s.Deadline = "2027-01-01T00:00:00Z" }, "", ""},
		{"cloud", func(s *Spec) { s.Resources.Clouds = []string{"aws", "azure"} }, "resources.clouds[1]", `unknown cloud "azure"`},
		{"gpu type", func(s *Spec) { s.Resources.GPUTypes = []string{"V100"} }, "resources.gpu_types[0]", "V100-16"},
		{"empty zone", func(s *Spec) { s.Resources.Zones = []string{""} }, "resources.zones[0]", "empty"},
		{"max gpus", func(s *Spec) { s.Resources.MaxGPUs = -2 }, "resources.max_gpus", "≥ 0"},
		{"spot", func(s *Spec) { s.Spot = "cheap" }, "spot", "must be one of spot, spot-with-fallback, on-demand"},
		{"checkpoint every", func(s *Spec) { s.Checkpoint.Every = 0 }, "checkpoint.every", "must be ≥ 1"},
		{"checkpoint every too large", func(s *Spec) { s.Checkpoint.Every = 1000 }, "checkpoint.every", "never checkpoints"},
		{"store missing", func(s *Spec) { s.Checkpoint.Store = "" }, "checkpoint.store", "required"},
		{"store scheme", func(s *Spec) { s.Checkpoint.Store = "gs://b/p" }, "checkpoint.store", `unsupported scheme "gs"`},
		{"store relative", func(s *Spec) { s.Checkpoint.Store = "file://ckpt" }, "checkpoint.store", "no host"},
		{"store no scheme", func(s *Spec) { s.Checkpoint.Store = "/tmp/x" }, "checkpoint.store", "no scheme"},
		{"store s3 bucket", func(s *Spec) { s.Checkpoint.Store = "s3:///prefix" }, "checkpoint.store", "missing bucket"},
		{"store s3", func(s *Spec) { s.Checkpoint.Store = "s3://b/p?endpoint=http://127.0.0.1:7070" }, "", ""},
		{"store file query", func(s *Spec) { s.Checkpoint.Store = "file:///tmp/x?sync=1" }, "checkpoint.store", "take no query"},
		{"store s3 parameter", func(s *Spec) { s.Checkpoint.Store = "s3://b/p?regoin=x" }, "checkpoint.store", "unknown query parameter"},
		{"store s3 part size", func(s *Spec) { s.Checkpoint.Store = "s3://b/p?part_size=1MiB" }, "checkpoint.store", "below the S3 minimum"},
		{"trainer kind", func(s *Spec) { s.Trainer.Kind = "torch" }, "trainer.kind", "must be one of sim, command"},
		{"command required", func(s *Spec) { s.Trainer.Kind = TrainerCommand }, "trainer.command", "required when trainer.kind is command"},
		{"command with sim", func(s *Spec) { s.Trainer.Command = []string{"x"} }, "trainer.command", "only for"},
		{"reserved env", func(s *Spec) { s.Trainer.Env = map[string]string{"SCHOONER_RANK": "1"} }, "trainer.env.SCHOONER_RANK", "reserved"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := validSpec()
			tc.mutate(&s)
			err := s.Validate()
			if tc.field == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			problems := Problems(err)
			require.Len(t, problems, 1, "%v", err)
			assert.Equal(t, tc.field, problems[0].Field)
			assert.Contains(t, problems[0].Problem, tc.says)
			assert.Contains(t, err.Error(), tc.field+": ")
		})
	}
}

// TestValidateRejectsWhatTheStoreRejects keeps spec validation and the node's store.Open from
// disagreeing: every URL the store's parser rejects fails validation, on checkpoint.store,
// with the store's reason.
func TestValidateRejectsWhatTheStoreRejects(t *testing.T) {
	for _, raw := range []string{
		"", "/var/ckpt", "gs://bucket", "s3:///prefix", "s3://key:secret@bucket/p",
		"s3://b/p?endpoint=127.0.0.1:7070", "s3://b/p?path_style=maybe", "s3://b/p?part_size=big",
		"s3://b/p?part_size=1MiB", "s3://b/p?regoin=x", "file://host/dir", "file:relative/dir",
		"file:///dir?x=1", "file://%zz",
	} {
		_, storeErr := store.ParseURL(raw)
		require.Error(t, storeErr, "the store rejects %q", raw)
		s := validSpec()
		s.Checkpoint.Store = raw
		problems := Problems(s.Validate())
		require.Len(t, problems, 1, "spec with store %q", raw)
		assert.Equal(t, "checkpoint.store", problems[0].Field, "store %q", raw)
		if raw != "" { // an empty store is reported as missing
			assert.Contains(t, problems[0].Problem, storeErr.Error(), "store %q", raw)
		}
	}
	for _, raw := range []string{"file:///var/ckpt", "s3://b/p?endpoint=https://s3.example&region=x&path_style=true&part_size=64MiB"} {
		_, storeErr := store.ParseURL(raw)
		require.NoError(t, storeErr)
		s := validSpec()
		s.Checkpoint.Store = raw
		require.NoError(t, s.Validate(), "store %q", raw)
	}
}

func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	err := Spec{Spot: "x"}.Validate()
	fields := map[string]bool{}
	for _, p := range Problems(err) {
		fields[p.Field] = true
	}
	for _, f := range []string{"name", "model", "global_batch", "iterations", "objective", "spot", "checkpoint.every", "checkpoint.store", "trainer.kind"} {
		assert.True(t, fields[f], "missing problem for %s in %v", f, err)
	}
}

func TestParseDeadline(t *testing.T) {
	submitted := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d, err := ParseDeadline("6h")
	require.NoError(t, err)
	assert.Equal(t, submitted.Add(6*time.Hour), d.Resolve(submitted, cloud.Real))
	d, err = ParseDeadline("2026-02-01T00:00:00Z")
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), d.Resolve(submitted, cloud.Real))
}

func TestLimitsAreConfigurable(t *testing.T) {
	s := validSpec().WithDefaults()
	s.Iterations = 500
	require.NoError(t, s.Validate())
	err := s.ValidateWithin(Limits{MaxIterations: 100})
	require.Error(t, err)
	require.Len(t, Problems(err), 1)
	assert.Equal(t, "iterations", Problems(err)[0].Field)
	assert.Contains(t, err.Error(), "limit of 100")
	assert.Equal(t, DefaultLimits, Limits{}.WithDefaults())
}
