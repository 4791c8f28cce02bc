package profiles

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

// requireEveryGPU checks that m has compute for every GPU type with a Spec, measured ones
// as given and the rest derived, with memory for every TP degree any compute uses.
func requireEveryGPU(t *testing.T, m *planner.ModelProfile, measured ...gpu.Type) {
	t.Helper()
	isMeasured := map[gpu.Type]bool{}
	for _, g := range measured {
		isMeasured[g] = true
	}
	for _, g := range gpu.KnownTypes {
		if _, ok := planner.Spec(g); !ok {
			continue
		}
		c := m.Compute[g]
		require.NotNil(t, c, "%s: no compute for %s", m.Name, g)
		assert.Equal(t, !isMeasured[g], c.Derived, "%s %s", m.Name, g)
		for tp, byMBS := range c.Times {
			require.Contains(t, m.Mem, tp, "%s %s", m.Name, g)
			for _, times := range byMBS {
				require.Len(t, times, m.NumLayers())
			}
		}
	}
	require.NoError(t, checkModel(m))
}

func TestLoadBuiltinModels(t *testing.T) {
	t.Parallel()
	measured := map[string][]gpu.Type{
		"OPT-350":     {gpu.A100_40, gpu.A100_80, gpu.V100, gpu.GH200},
		"GPT-Neo-2.7": {gpu.A100_40, gpu.A100_80, gpu.V100, gpu.GH200},
		"LLAMA-3-8":   {gpu.A100_40, gpu.V100, gpu.GH200},
		"OPT-30":      {gpu.A100_40, gpu.V100, gpu.GH200},
	}
	for _, name := range []string{"OPT-350M", "GPT-Neo-2.7B", "Llama-3-8B", "OPT-30B"} {
		m, err := Load(name, "")
		require.NoError(t, err, name)
		canon, _ := planner.ResolveModelName(name)
		assert.Equal(t, canon, m.Name)
		requireEveryGPU(t, m, measured[canon]...)
		for _, tp := range []int{1, 2, 4} {
			assert.Contains(t, m.Mem, tp, name)
		}
	}

	// Derived GPUs cover the measured microbatch sizes too, so the search can compare them.
	m, err := Load("OPT-350", "")
	require.NoError(t, err)
	assert.Contains(t, m.Compute[gpu.H100].Times[1], 128)
	assert.Equal(t, 0.001908, m.Compute[gpu.A100_40].Times[2][1][2].Fwd)
	assert.NotContains(t, m.Mem, 16, "no TP beyond a machine")

	// Sailor's LLAMA-3-8 keeps its own 35-layer layout.
	llama, err := Load("LLAMA-3-8", "")
	require.NoError(t, err)
	assert.Equal(t, 35, llama.NumLayers())
}

func TestLoadUnknownModel(t *testing.T) {
	t.Parallel()
	_, err := Load("GPT-5", "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown model "GPT-5"`)
	assert.Contains(t, err.Error(), "GPT-Neo-2.7, LLAMA-3-8, OPT-30, OPT-350")

	dir := t.TempDir()
	require.NoError(t, WriteModel(filepath.Join(dir, "tiny.json"), tiny()))
	_, err = Load("GPT-5", dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tiny")

	_, err = Load("OPT-350", filepath.Join(dir, "absent"))
	require.Error(t, err)
}

func TestLoadFromSailorDirectory(t *testing.T) {
	t.Parallel()
	requireSharedSailor(t)
	fromDir, err := Load("OPT-350", sharedSailorWithSimSet(t))
	require.NoError(t, err)
	fromBundle, err := Load("OPT-350", "")
	require.NoError(t, err)
	assert.Equal(t, fromBundle, fromDir)
}

func TestLoadFromOurDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	// A measured custom model with its architecture: every other GPU gets derived compute.
	a := planner.Architecture{Name: "my-gpt", Layers: 2, Hidden: 256, Heads: 8, FFN: 1024, Vocab: 1000, SeqLen: 128}
	own := planner.BuildModel(a, []gpu.Type{gpu.L4}, []int{1}, []int{1, 2})
	own.Compute[gpu.L4].Derived = false
	own.Compute[gpu.L4].Source = "measured on my L4"
	require.NoError(t, WriteModelFile(filepath.Join(dir, "whatever-file-name.json"), &ModelFile{Architecture: &a, ModelProfile: *own}))

	m, err := Load("my-gpt", dir)
	require.NoError(t, err)
	requireEveryGPU(t, m, gpu.L4)
	assert.Equal(t, "measured on my L4", m.Compute[gpu.L4].Source)
	assert.Contains(t, m.Mem, 8, "default TP degrees are added")

	// Without an architecture: measured data only.
	require.NoError(t, WriteModel(filepath.Join(dir, "tiny.json"), tiny()))
	tm, err := Load("tiny", dir)
	require.NoError(t, err)
	assert.Equal(t, tiny(), tm)

	// A built-in model this directory lacks comes from the bundle.
	opt, err := Load("OPT-350M", dir)
	require.NoError(t, err)
	assert.False(t, opt.Compute[gpu.A100_40].Derived)

	// A built-in model this directory has (under an alias) is taken from it, and its
	// architecture is the built-in one.
	bm := planner.BuildModel(mustArch(t, "OPT-350"), []gpu.Type{gpu.T4}, []int{1}, []int{1})
	bm.Name = "OPT-350M"
	bm.Compute[gpu.T4].Derived = false
	require.NoError(t, WriteModel(filepath.Join(dir, "opt.json"), bm))
	got, err := Load("OPT-350", dir)
	require.NoError(t, err)
	assert.Equal(t, "OPT-350", got.Name)
	assert.False(t, got.Compute[gpu.T4].Derived)
	assert.True(t, got.Compute[gpu.A100_40].Derived, "this directory's data replaces the bundle's")
	requireEveryGPU(t, got, gpu.T4)

	// A broken file is an error naming it.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "broken.json"), []byte("{"), 0o644))
	_, err = Load("OPT-350", dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "broken.json")
}

func mustArch(t *testing.T, name string) planner.Architecture {
	t.Helper()
	a, ok := planner.BuiltinArchitecture(name)
	require.True(t, ok)
	return a
}

func TestLoadNetwork(t *testing.T) {
	t.Parallel()
	n, err := LoadNetwork("")
	require.NoError(t, err)
	require.NoError(t, checkNetwork(n))
	def := planner.DefaultNetwork()
	for _, g := range gpu.KnownTypes {
		assert.NotEmpty(t, n.IntraNode[g], g)
		assert.NotEmpty(t, n.InterNode[g], g)
	}
	assert.Len(t, n.Zones, 5)
	assert.Equal(t, def.InterZone, n.InterZone)
	assert.Equal(t, 0.05, n.EgressInterContinent)
	// Sailor's zone pairs and prices answer the simulator's questions.
	a := planner.Endpoint{GPU: gpu.V100, GPUsPerNode: 1, Zone: "us-central1-a", Region: "us-central1"}
	b := planner.Endpoint{GPU: gpu.V100, GPUsPerNode: 1, Zone: "us-west1-b", Region: "us-west1"}
	assert.Equal(t, 0.02, n.EgressUSDPerGB(a, b))
	assert.Equal(t, n.Zones["us-central1-a"]["us-west1-b"], n.Between(a, b))

	requireSharedSailor(t)
	fromDir, err := LoadNetwork(sharedSailor)
	require.NoError(t, err)
	assert.Equal(t, n, fromDir)

	// network.json in our format goes on top.
	dir := t.TempDir()
	over := &planner.Network{
		InterNode:       map[gpu.Type]map[int]planner.Link{gpu.H100: {8: {Coeffs: [3]float64{0, 0, 300}, PeakBps: 300e9}}},
		EgressInterZone: 0.02,
	}
	require.NoError(t, WriteNetwork(filepath.Join(dir, NetworkFileName), over))
	merged, err := LoadNetwork(dir)
	require.NoError(t, err)
	assert.Equal(t, 300e9, merged.InterNode[gpu.H100][8].PeakBps)
	assert.Equal(t, n.InterNode[gpu.H100][4], merged.InterNode[gpu.H100][4])
	assert.Equal(t, 0.02, merged.EgressInterZone)
	assert.Equal(t, n.Zones, merged.Zones)

	// A directory of model files only: the defaults and the bundle.
	only := t.TempDir()
	plain, err := LoadNetwork(only)
	require.NoError(t, err)
	assert.Equal(t, n, plain)

	require.NoError(t, os.WriteFile(filepath.Join(only, NetworkFileName), []byte(`{"format": 1}`), 0o644))
	_, err = LoadNetwork(only)
	require.Error(t, err)
	assert.Contains(t, err.Error(), NetworkFileName)
}

func TestMergeNetworkLeavesItsArgumentsAlone(t *testing.T) {
	t.Parallel()
	base := planner.DefaultNetwork()
	over := &planner.Network{Zones: map[string]map[string]planner.Link{"a": {"b": {PeakBps: 1}}}}
	out := MergeNetwork(base, over)
	assert.Empty(t, base.Zones)
	assert.Equal(t, 1.0, out.Zones["a"]["b"].PeakBps)
	out.IntraNode[gpu.A100_40][2] = planner.Link{}
	assert.NotEqual(t, planner.Link{}, base.IntraNode[gpu.A100_40][2])
	assert.Equal(t, base, MergeNetwork(base, nil))
}
