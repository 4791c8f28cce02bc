package profiles

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

func TestModelRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m, err := Load("OPT-350M", "")
	require.NoError(t, err)

	path := filepath.Join(dir, "OPT-350.json")
	require.NoError(t, WriteModel(path, m))
	back, err := ReadModel(path)
	require.NoError(t, err)
	assert.Equal(t, m, back)

	a, _ := planner.BuiltinArchitecture("OPT-350")
	require.NoError(t, WriteModelFile(path, &ModelFile{Architecture: &a, ModelProfile: *m}))
	f, err := ReadModelFile(path)
	require.NoError(t, err)
	assert.Equal(t, ModelFormat, f.Format)
	assert.Equal(t, &a, f.Architecture)
	assert.Equal(t, *m, f.ModelProfile)

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary files left behind")
}

func TestNetworkRoundTrip(t *testing.T) {
	t.Parallel()
	n, err := LoadNetwork("")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), NetworkFileName)
	require.NoError(t, WriteNetwork(path, n))
	back, err := ReadNetwork(path)
	require.NoError(t, err)
	assert.Equal(t, n, back)
}

// tiny is a valid two-layer profile to break.
func tiny() *planner.ModelProfile {
	lt := planner.LayerTime{Fwd: 1e-3, Bwd: 2e-3, Update: 1e-4}
	lm := planner.LayerMem{ParamsFloats: 10, ActOutputFloats: 5, ActInputFloats: 5, ActMemFloats: 20}
	return &planner.ModelProfile{
		Name: "tiny", SeqLen: 16,
		Mem: map[int][]planner.LayerMem{1: {lm, lm}, 2: {lm, lm}},
		Compute: map[gpu.Type]*planner.Compute{
			gpu.A100_40: {GPU: gpu.A100_40, Source: "test", Times: map[int]map[int][]planner.LayerTime{1: {1: {lt, lt}}}},
		},
	}
}

func TestWriteModelRefusesBadProfiles(t *testing.T) {
	t.Parallel()
	m := tiny()
	m.Mem[2] = m.Mem[2][:1]
	err := WriteModel(filepath.Join(t.TempDir(), "x.json"), m)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mem tp 2 has 1 layers, other TP degrees have 2")
	assert.Error(t, WriteModel("x.json", nil))
	assert.Error(t, WriteNetwork("x.json", nil))
}

func TestReadModelBadInput(t *testing.T) {
	t.Parallel()
	valid := func() *planner.ModelProfile { return tiny() }
	cases := []struct {
		name string
		edit func(m *planner.ModelProfile)
		raw  string // used instead of edit when set
		want []string
	}{
		{name: "malformed JSON", raw: "{\n  \"format\": \"schooner.model-profile/v1\",\n  \"name\": \"tiny\",,\n}",
			want: []string{"malformed JSON at line 3"}},
		{name: "wrong type", raw: `{"format": "schooner.model-profile/v1", "name": 7}`, want: []string{"wrong type at line 1", "name"}},
		{name: "unknown field", raw: `{"format": "schooner.model-profile/v1", "nmae": "x"}`, want: []string{`unknown field "nmae"`}},
		{name: "trailing data", raw: `{"format": "schooner.model-profile/v1"} {}`, want: []string{"unexpected data after the JSON value"}},
		{name: "wrong format", raw: `{"format": "something-else"}`, want: []string{`format is "something-else"`}},
		{name: "missing layers", edit: func(m *planner.ModelProfile) {
			c := m.Compute[gpu.A100_40]
			c.Times[1][1] = c.Times[1][1][:1]
		}, want: []string{"compute A100-40 tp 1 mbs 1 has 1 layers, mem has 2"}},
		{name: "negative time", edit: func(m *planner.ModelProfile) {
			m.Compute[gpu.A100_40].Times[1][1][1].Bwd = -1
		}, want: []string{"compute A100-40 tp 1 mbs 1 layer 1: bwd time is -1"}},
		{name: "negative memory", edit: func(m *planner.ModelProfile) {
			m.Mem[1][0].ActMemFloats = -3
		}, want: []string{"mem tp 1 layer 0: act_mem_floats is -3"}},
		{name: "layer counts differ between TP degrees", edit: func(m *planner.ModelProfile) {
			m.Mem[2] = append(m.Mem[2], m.Mem[2][0])
		}, want: []string{"mem tp 2 has 3 layers, other TP degrees have 2"}},
		{name: "compute without memory", edit: func(m *planner.ModelProfile) {
			m.Compute[gpu.A100_40].Times[4] = m.Compute[gpu.A100_40].Times[1]
		}, want: []string{"compute A100-40 has tp 4, mem does not"}},
		{name: "not a GPU type name", edit: func(m *planner.ModelProfile) {
			m.Compute["RTX 9090"] = &planner.Compute{Times: m.Compute[gpu.A100_40].Times}
		}, want: []string{`"RTX 9090" is not a GPU type name`}},
		{name: "no name, no seq_len, no mem", edit: func(m *planner.ModelProfile) {
			m.Name, m.SeqLen, m.Mem, m.Compute = "", 0, nil, nil
		}, want: []string{"model has no name", "seq_len must be positive", "mem is empty"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "model.json")
			if c.raw != "" {
				require.NoError(t, os.WriteFile(path, []byte(c.raw), 0o644))
			} else {
				m := valid()
				c.edit(m)
				// Bypass WriteModel's own check to produce the bad file.
				require.NoError(t, writeJSON(path, &ModelFile{Format: ModelFormat, ModelProfile: *m}))
			}
			_, err := ReadModel(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
			var fe *FileError
			require.True(t, errors.As(err, &fe))
			assert.Equal(t, path, fe.Path)
		})
	}

	_, err := ReadModel(filepath.Join(t.TempDir(), "absent.json"))
	require.Error(t, err)
	assert.True(t, errors.Is(err, os.ErrNotExist))
}

func TestReadModelArchitectureMustMatch(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tiny.json")
	a, _ := planner.BuiltinArchitecture("OPT-350")
	require.NoError(t, WriteModelFile(path, &ModelFile{Architecture: &a, ModelProfile: *tiny()}))
	_, err := ReadModelFile(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "architecture has 26 layers, mem has 2")

	a.Heads = 0
	require.NoError(t, writeJSON(path, &ModelFile{Format: ModelFormat, Architecture: &a, ModelProfile: *tiny()}))
	_, err = ReadModelFile(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "heads must be positive")
}

func TestReadNetworkBadInput(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ raw, want string }{
		"malformed":      {`{"format": "schooner.network-profile/v1", "zones": {`, "malformed JSON"},
		"wrong format":   {`{"format": "schooner.model-profile/v1"}`, `want "schooner.network-profile/v1"`},
		"negative peak":  {`{"format": "schooner.network-profile/v1", "inter_node": {"A100-40": {"1": {"coeffs": [0,0,1], "peak_bps": -5}}}}`, "inter_node A100-40 1 GPUs per node: peak_bps is -5"},
		"bad gpu name":   {`{"format": "schooner.network-profile/v1", "intra_node": {"RTX 2080/x": {"2": {"coeffs": [0,0,1]}}}}`, `intra_node: "RTX 2080/x" is not a GPU type name`},
		"bad count":      {`{"format": "schooner.network-profile/v1", "intra_node": {"A100-40": {"0": {"coeffs": [0,0,1]}}}}`, "GPUs per node 0 is not positive"},
		"negative price": {`{"format": "schooner.network-profile/v1", "egress": {"a": {"b": -1}}, "egress_inter_zone": -2}`, "egress a -> b is -1"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), NetworkFileName)
			require.NoError(t, os.WriteFile(path, []byte(c.raw), 0o644))
			_, err := ReadNetwork(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), c.want)
			if name == "negative price" {
				assert.True(t, strings.Contains(err.Error(), "egress_inter_zone is -2"))
			}
		})
	}
}

// The examples in docs/profiles.md are valid files.
func TestDocExamplesParse(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/profiles.md")
	require.NoError(t, err)
	var blocks []string
	for _, part := range strings.Split(string(doc), "```json\n")[1:] {
		blocks = append(blocks, strings.SplitN(part, "```", 2)[0])
	}
	require.Len(t, blocks, 2)
	dir := t.TempDir()
	modelPath := filepath.Join(dir, "tiny-gpt.json")
	require.NoError(t, os.WriteFile(modelPath, []byte(blocks[0]), 0o644))
	f, err := ReadModelFile(modelPath)
	require.NoError(t, err)
	assert.Equal(t, "tiny-gpt", f.Name)
	netPath := filepath.Join(dir, NetworkFileName)
	require.NoError(t, os.WriteFile(netPath, []byte(blocks[1]), 0o644))
	n, err := ReadNetwork(netPath)
	require.NoError(t, err)
	assert.Equal(t, 0.09, n.EgressInterContinent)

	// The example's architecture and memory agree with TransformerMem.
	assert.Equal(t, planner.TransformerMem(*f.Architecture, []int{1}), f.Mem)
	m, err := Load("tiny-gpt", dir)
	require.NoError(t, err)
	assert.False(t, m.Compute[gpu.A100_40].Derived)
	assert.True(t, m.Compute[gpu.H100].Derived)
}
