package serving

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/internal/specfile"
)

func valid() Spec {
	return Spec{Name: "chat", Model: Model{Name: "tiny", Seed: 7}, Stages: 2}.WithDefaults()
}

func TestDefaults(t *testing.T) {
	s := Spec{}.WithDefaults()
	assert.Equal(t, 1, s.Stages)
	assert.Equal(t, 1, s.Replicas)
	assert.Equal(t, ReplicationOn, s.KVReplication)
	assert.Equal(t, DefaultMaxBatch, s.MaxBatch)
	assert.Equal(t, "spot", string(s.Spot))
	require.NoError(t, valid().Validate())
}

func TestValidateNamesEveryBadField(t *testing.T) {
	for name, c := range map[string]struct {
		edit  func(*Spec)
		field string
	}{
		"bad name":         {func(s *Spec) { s.Name = "Chat!" }, "name"},
		"unknown model":    {func(s *Spec) { s.Model.Name = "gpt-5" }, "model.name"},
		"both":             {func(s *Spec) { s.Model.Layers = 2 }, "model"},
		"no model":         {func(s *Spec) { s.Model = Model{} }, "model"},
		"kv heads":         {func(s *Spec) { s.Model = Model{Layers: 4, Hidden: 64, Heads: 4, KVHeads: 3, FFN: 128, Vocab: 256} }, "model.kv_heads"},
		"missing ffn":      {func(s *Spec) { s.Model = Model{Layers: 4, Hidden: 64, Heads: 4, KVHeads: 2, Vocab: 256} }, "model.ffn"},
		"more stages":      {func(s *Spec) { s.Stages = 5 }, "stages"},
		"stages bound":     {func(s *Spec) { s.Stages = -1 }, "stages"},
		"replicas":         {func(s *Spec) { s.Replicas = MaxReplicas + 1 }, "replicas"},
		"batch":            {func(s *Spec) { s.MaxBatch = -3 }, "max_batch"},
		"context":          {func(s *Spec) { s.MaxContext = MaxContext + 1 }, "max_context"},
		"replication":      {func(s *Spec) { s.KVReplication = "yes" }, "kv_replication"},
		"spot":             {func(s *Spec) { s.Spot = "cheap" }, "spot"},
		"cloud":            {func(s *Spec) { s.Resources.Clouds = []string{"azure"} }, "resources.clouds[0]"},
		"gpu":              {func(s *Spec) { s.Resources.GPUTypes = []string{"K80"} }, "resources.gpu_types[0]"},
		"negative latency": {func(s *Spec) { s.Latency.TTFTMillis = -1 }, "latency"},
		"queue":            {func(s *Spec) { s.Queue = -1 }, "queue"},
		"prefill bound":    {func(s *Spec) { s.PrefillReplicas = MaxReplicas + 1 }, "prefill_replicas"},
		"prefill negative": {func(s *Spec) { s.PrefillReplicas = -1 }, "prefill_replicas"},
		"prefill no kv":    {func(s *Spec) { s.PrefillReplicas, s.KVReplication = 1, ReplicationOff }, "prefill_replicas"},
		"negative swap":    {func(s *Spec) { s.KVSwapGiB = -1 }, "kv_swap_gib"},
		"swap bound":       {func(s *Spec) { s.KVSwapGiB = MaxKVSwapGiB + 1 }, "kv_swap_gib"},
	} {
		t.Run(name, func(t *testing.T) {
			s := valid()
			c.edit(&s)
			err := s.Validate()
			require.Error(t, err)
			var fields []string
			for _, p := range Problems(err) {
				fields = append(fields, p.Field)
			}
			assert.Contains(t, fields, c.field, "%v", err)
			assert.True(t, strings.HasPrefix(err.Error(), "invalid serving spec"))
		})
	}
}

func TestPrefillPoolIsAnOption(t *testing.T) {
	s := valid()
	assert.False(t, s.Disaggregated(), "colocated unless asked")
	s.PrefillReplicas = 3
	require.NoError(t, s.Validate())
	assert.True(t, s.Disaggregated())
	// Prefill replicas are dealt round-robin over the decode replicas.
	assert.Equal(t, []int{0, 1, 0}, []int{Feeds(0, 2), Feeds(1, 2), Feeds(2, 2)})
	assert.Equal(t, 0, Feeds(1, 0), "no decode replica laid out yet")
}

func TestExamplesAreValid(t *testing.T) {
	files, err := filepath.Glob("../examples/serve-*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		s, err := ParseSpec(data, specfile.FormatOf(f))
		require.NoError(t, err, f)
		require.NoError(t, s.WithDefaults().Validate(), f)
	}
	_, err = ParseSpec([]byte("name: a\nstage: 2\n"), specfile.FormatYAML)
	assert.ErrorContains(t, err, "stage", "a typo is an error, not an ignored field")
}

func TestBuiltinDimensions(t *testing.T) {
	d := Model{Name: "llama-8b", Seed: 3}.Dims()
	assert.Equal(t, 32, d.Layers)
	assert.Equal(t, int64(3), d.Seed)
	own := Model{Layers: 2, Hidden: 8, Heads: 2, KVHeads: 1, FFN: 16, Vocab: 10}
	assert.Equal(t, own, own.Dims())
}

// A count whose absence means its default is refused when the file gives it as 0: a user who
// writes "replicas: 0" wants no replicas, not the default one. Every such count is named at
// once, in YAML and JSON alike; a 0 where 0 means off (prefill_replicas) still parses.
func TestParseSpecRefusesAZeroCountThatWouldMeanItsDefault(t *testing.T) {
	_, err := ParseSpec([]byte("name: chat\nmodel: {name: tiny}\nreplicas: 0\nqueue: 0.0\nprefill_replicas: 0\n"), specfile.FormatYAML)
	require.Error(t, err)
	problems := specfile.Problems(err)
	require.Len(t, problems, 2, "%v", err)
	assert.Equal(t, "replicas", problems[0].Field)
	assert.Contains(t, problems[0].Problem, "leave replicas out for its default (1)")
	assert.Equal(t, "queue", problems[1].Field)

	_, err = ParseSpec([]byte(`{"name":"chat","model":{"name":"tiny"},"stages":0}`), specfile.FormatJSON)
	require.Error(t, err)
	assert.Equal(t, "stages", specfile.Problems(err)[0].Field)

	s, err := ParseSpec([]byte("name: chat\nmodel: {name: tiny}\nprefill_replicas: 0\nreplicas: 2\n"), specfile.FormatYAML)
	require.NoError(t, err)
	assert.Equal(t, 2, s.Replicas)
}
