package profiles

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

// sharedSailor is Sailor's data as published, in the shared data folder next to the
// repository. Tests that need it fail without it: it is the reference the bundle is
// checked against.
const sharedSailor = "../../../shared/data/sailor"

func requireSharedSailor(t *testing.T) {
	t.Helper()
	_, err := os.Stat(filepath.Join(sharedSailor, sailorLLMInfo))
	require.NoError(t, err, "Sailor's data must be at %s (see shared/data/README.md)", sharedSailor)
}

// sharedSailorWithSimSet is a copy of shared/data/sailor with the bundle's copy of Sailor's
// simulator profile set (Planner/simulations/profiles_tmp.json), which shared/data lacks.
func sharedSailorWithSimSet(t *testing.T) string {
	t.Helper()
	requireSharedSailor(t)
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(sharedSailor)))
	data, err := fs.ReadFile(bundleSource().fsys, sailorSimProfiles)
	require.NoError(t, err)
	writeFile(t, filepath.Join(dir, sailorSimProfiles), string(data))
	return dir
}

func TestImportSailorEqualsBundle(t *testing.T) {
	t.Parallel()
	models, notes, err := ImportSailorWithNotes(sharedSailorWithSimSet(t))
	require.NoError(t, err)
	bundledModels, bundledNet, err := Bundled()
	require.NoError(t, err)
	assert.Equal(t, bundledModels, models)

	net, err := ImportSailorNetwork(sharedSailor)
	require.NoError(t, err)
	assert.Equal(t, bundledNet, net)

	joined := strings.Join(notes, "\n")
	assert.Contains(t, joined, "GPT-Neo-2.7/GH-96/profile.json: 26 layers")
	for _, g := range []string{"RTX-2080", "RTX-3090", "Titan-RTX"} {
		assert.Contains(t, joined, g+"/profile.json: "+g+" has no datasheet in schooner: imported by its profile alone")
	}
	assert.Contains(t, joined, "OPT-30/V100-16/profile.json: tp 8 has no memory")
}

func TestBundledModels(t *testing.T) {
	t.Parallel()
	models, _, err := Bundled()
	require.NoError(t, err)
	require.ElementsMatch(t, planner.BuiltinModels(), mapKeys(models))

	want := map[string]struct {
		layers, seq int
		gpus        []gpu.Type
	}{
		"OPT-350":     {26, 2048, []gpu.Type{gpu.A100_40, gpu.A100_80, gpu.V100, gpu.GH200, "RTX-2080", "RTX-3090", "Titan-RTX"}},
		"GPT-Neo-2.7": {34, 2048, []gpu.Type{gpu.A100_40, gpu.A100_80, gpu.V100, gpu.GH200}},
		"LLAMA-3-8":   {35, 8192, []gpu.Type{gpu.A100_40, gpu.V100, gpu.GH200}},
		"OPT-30":      {50, 2048, []gpu.Type{gpu.A100_40, gpu.V100, gpu.GH200}},
	}
	for name, w := range want {
		m := models[name]
		assert.Equal(t, name, m.Name)
		assert.Equal(t, w.layers, m.NumLayers(), name)
		assert.Equal(t, w.seq, m.SeqLen, name)
		assert.ElementsMatch(t, w.gpus, mapKeys(m.Compute), name)
		for g, c := range m.Compute {
			assert.False(t, c.Derived, "%s %s", name, g)
			assert.Equal(t, g, c.GPU)
			assert.Contains(t, c.Source, "measured: Sailor Planner/")
		}
		require.NoError(t, checkModel(m), name)
	}

	// Sailor's paper: OPT-350M on A100-40, mbs 1, TP 2, one transformer layer: 1.908 ms
	// forward, 3.398 ms backward, 1.504 ms update. That is every block but the first
	// (layer 1 measured 1.853 and 3.388 ms).
	opt := models["OPT-350"].Compute[gpu.A100_40].Times[2][1]
	for layer := 2; layer <= 24; layer++ {
		assert.Equal(t, planner.LayerTime{Fwd: 0.001908, Bwd: 0.003398, Update: 0.001504}, opt[layer], "layer %d", layer)
	}
	assert.Equal(t, planner.LayerTime{Fwd: 0.001853, Bwd: 0.003388, Update: 0.001504}, opt[1])
	assert.Equal(t, 12596224.0, models["OPT-350"].Mem[1][1].ParamsFloats)
	assert.Equal(t, 2097152.0, models["OPT-350"].Mem[1][1].ActOutputFloats)

	// Bundled returns copies.
	models["OPT-350"].Compute[gpu.A100_40].Times[2][1][2].Fwd = 99
	again, _, err := Bundled()
	require.NoError(t, err)
	assert.Equal(t, 0.001908, again["OPT-350"].Compute[gpu.A100_40].Times[2][1][2].Fwd)
}

func TestBundledNetwork(t *testing.T) {
	t.Parallel()
	_, n, err := Bundled()
	require.NoError(t, err)
	require.NoError(t, checkNetwork(n))
	measured := []gpu.Type{gpu.A100_40, gpu.A100_80, gpu.V100, gpu.GH200, "RTX-2080", "RTX-3090", "Titan-RTX"}
	assert.ElementsMatch(t, measured, mapKeys(n.IntraNode))
	assert.ElementsMatch(t, measured, mapKeys(n.InterNode))
	assert.Equal(t, 248876169884.0839, n.IntraNode[gpu.A100_40][2].PeakBps)
	assert.Equal(t, 22934533176.529446, n.InterNode[gpu.GH200][1].PeakBps)

	// Five zones, every ordered pair measured; the fastest fit per pair.
	assert.Len(t, n.Zones, 5)
	for a, m := range n.Zones {
		assert.Len(t, m, 4, a)
	}
	assert.Equal(t, 6654214604.308426, n.Zones["us-central1-a"]["us-central1-b"].PeakBps)
	assert.Equal(t, 1091637396.6324494, n.Zones["us-central1-a"]["us-west1-b"].PeakBps)

	assert.Equal(t, 0.01, n.Egress["us-central1-a"]["us-central1-b"])
	assert.Equal(t, 0.02, n.Egress["us-west1-b"]["us-central1-f"])
	_, same := n.Egress["us-central1-a"]["us-central1-a"]
	assert.False(t, same, "same-zone prices are implicit")

	// The defaults copy Sailor's fits exactly for the types schooner offers (a type known by
	// its profile alone has its links in the imported network only).
	def := planner.DefaultNetwork()
	for g, byCount := range n.IntraNode {
		for c, l := range byCount {
			if gpu.Known(g) {
				assert.Equal(t, l, def.IntraNode[g][c], "intra %s %d", g, c)
			}
		}
	}
	for g, byCount := range n.InterNode {
		for c, l := range byCount {
			if gpu.Known(g) {
				assert.Equal(t, l, def.InterNode[g][c], "inter %s %d", g, c)
			}
		}
	}
	assert.Equal(t, n.Zones["us-central1-a"]["us-central1-b"], def.InterZone)
	assert.Equal(t, n.Zones["us-central1-a"]["us-west1-b"], def.InterRegion)
}

// The heterogeneous multizone file in shared/data is not bundled: its real entries never
// beat the homogeneous file's and its placeholders are dropped, so both give the same links.
func TestImportSailorHeterogeneousPlaceholders(t *testing.T) {
	t.Parallel()
	requireSharedSailor(t)
	_, notes, err := importSailorNetwork(dirSource(sharedSailor))
	require.NoError(t, err)
	assert.Contains(t, strings.Join(notes, "\n"), "placeholders")
}

// copySailor makes a writable copy of the bundled Sailor tree to break.
func copySailor(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := bundleSource()
	require.NoError(t, os.CopyFS(dir, src.fsys))
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func TestImportSailorBadInput(t *testing.T) {
	t.Parallel()
	profile := func(dir string) string {
		return filepath.Join(dir, "Planner/sailor_planner/profiles/OPT-350/A100-40/profile.json")
	}
	oneMBS := func(layers string) string { return `{"1": {"1": {` + layers + `}}}` }
	cases := []struct {
		name  string
		setup func(dir string)
		want  []string
	}{
		{"malformed profile", func(dir string) { writeFile(t, profile(dir), `{"1": {"1": {"0": [1, 2, 3],}}}`) },
			[]string{"OPT-350/A100-40/profile.json", "malformed JSON at line 1"}},
		{"missing layer", func(dir string) {
			writeFile(t, profile(dir), oneMBS(`"0": [0.1, 0.1, 0.1], "2": [0.1, 0.1, 0.1]`))
		}, []string{"profile.json", "mbs 1 tp 1", "layer 2 is out of range", "missing"}},
		{"negative time", func(dir string) {
			var layers []string
			for i := 0; i < 26; i++ {
				v := "0.001"
				if i == 5 {
					v = "-0.001"
				}
				layers = append(layers, `"`+strconv.Itoa(i)+`": [0.001, `+v+`, 0.001]`)
			}
			writeFile(t, profile(dir), oneMBS(strings.Join(layers, ",")))
		}, []string{"profile.json", "mbs 1 tp 1", "layer 5", "bwd time is -0.001"}},
		{"two numbers", func(dir string) { writeFile(t, profile(dir), oneMBS(`"0": [0.1, 0.1]`)) },
			[]string{"layer 0 has 2 numbers"}},
		{"layer counts differ inside a file", func(dir string) {
			writeFile(t, profile(dir), `{"1": {"1": {"0": [1,1,1], "1": [1,1,1]}, "2": {"0": [1,1,1]}}}`)
		}, []string{"profile.json", "mbs 1 tp 2 has 1 layers, other entries 2"}},
		{"llm_info layer counts differ between TP degrees", func(dir string) {
			writeFile(t, filepath.Join(dir, sailorLLMInfo), `{"M": {
				"1": {"0": {"params_floats": 1, "act_output_floats": 1, "act_input_floats": 1, "act_mem_floats": 1}},
				"2": {"0": {"params_floats": 1, "act_output_floats": 1, "act_input_floats": 1, "act_mem_floats": 1},
				      "1": {"params_floats": 1, "act_output_floats": 1, "act_input_floats": 1, "act_mem_floats": 1}}}}`)
		}, []string{"llm_info.json", "model M tp 2 has 2 layers, other TP degrees 1"}},
		{"llm_info negative", func(dir string) {
			writeFile(t, filepath.Join(dir, sailorLLMInfo), `{"M": {"1": {"0": {"params_floats": -1, "act_output_floats": 1, "act_input_floats": 1, "act_mem_floats": 1}}}}`)
		}, []string{"llm_info.json", "model M tp 1: layer 0 has -1 floats"}},
		{"llm_info field missing", func(dir string) {
			writeFile(t, filepath.Join(dir, sailorLLMInfo), `{"M": {"1": {"0": {"params_floats": 1}}}}`)
		}, []string{"llm_info.json", "lacks a *_floats field"}},
		{"llm_info missing", func(dir string) { require.NoError(t, os.Remove(filepath.Join(dir, sailorLLMInfo))) },
			[]string{"llm_info.json", "not exist"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := copySailor(t)
			c.setup(dir)
			_, err := ImportSailor(dir)
			require.Error(t, err)
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
			if !strings.Contains(c.name, "llm_info missing") {
				var fe *FileError
				assert.True(t, errors.As(err, &fe), "%v", err)
			}
		})
	}
}

func TestImportSailorSkipsWholeProfilesWithTheWrongLayerCount(t *testing.T) {
	t.Parallel()
	dir := copySailor(t)
	require.NoError(t, os.Remove(filepath.Join(dir, sailorSimProfiles)))
	writeFile(t, filepath.Join(dir, "Planner/sailor_planner/profiles/OPT-350/A100-40/profile.json"),
		`{"1": {"1": {"0": [1,1,1], "1": [1,1,1]}}}`)
	models, notes, err := ImportSailorWithNotes(dir)
	require.NoError(t, err)
	assert.NotContains(t, models["OPT-350"].Compute, gpu.A100_40)
	assert.Contains(t, strings.Join(notes, "\n"), "OPT-350/A100-40/profile.json: 2 layers, Planner/llm_info.json has 26")
}

func TestImportSailorNetworkBadInput(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		file, content, want string
	}{
		"short fit":    {sailorIntraNode, `{"A100-40": {"2": [[1, 2], 5]}}`, "A100-40 2 GPUs per node: fit coefficients [1, 2] are not three numbers"},
		"no peak":      {sailorIntraNode, `{"A100-40": {"2": [[1, 2, 3]]}}`, "fit has 1 elements"},
		"bad count":    {sailorNetCoeffs, `{"inter": {"V100-16": {"x": [[1, 2, 3], 5]}}}`, `GPUs per node "x"`},
		"no inter":     {sailorNetCoeffs, `{"intra": {}}`, `no "inter" section`},
		"bad cost":     {sailorCommCost, `{"a": {"b": -0.01}}`, "a -> b costs -0.01"},
		"malformed":    {sailorMultizone, `{"a": `, "malformed JSON"},
		"missing cost": {sailorCommCost, "", "not exist"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := copySailor(t)
			path := filepath.Join(dir, filepath.FromSlash(c.file))
			if c.content == "" {
				require.NoError(t, os.Remove(path))
			} else {
				writeFile(t, path, c.content)
			}
			_, err := ImportSailorNetwork(dir)
			require.Error(t, err)
			assert.Contains(t, err.Error(), filepath.Base(c.file))
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func mapKeys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A GPU type schooner has no datasheet for is simulated from its profile alone: the plan
// runs, its times come from Sailor's RTX measurements, its memory is predicted and unchecked.
func TestPlanOnGPUsKnownByProfileAloneSimulates(t *testing.T) {
	t.Parallel()
	models, net, err := Bundled()
	require.NoError(t, err)
	p, err := planner.ParsePlan([]byte(`{"model": "OPT-350", "global_batch": 64, "micro_batch": 2, "stages": [
		{"first_layer": 0, "last_layer": 12, "replicas": [{"gpu": "RTX-3090", "tp": 1, "zone": "us-central1-a", "region": "us-central1", "gpus_per_node": 2}]},
		{"first_layer": 13, "last_layer": 25, "replicas": [{"gpu": "Titan-RTX", "tp": 1, "zone": "us-central1-a", "region": "us-central1", "gpus_per_node": 2}]}]}`))
	require.NoError(t, err)
	est, err := planner.Simulate(p, models["OPT-350"], net)
	require.NoError(t, err)
	assert.Greater(t, est.IterTime, 0.0)
	assert.False(t, est.Derived, "measured times, not datasheet-derived ones")
	for i, st := range est.Stages {
		assert.Zero(t, st.MemLimitBytes, "stage %d: no datasheet, no capacity", i)
		assert.Greater(t, st.PeakMemBytes, 0.0, "stage %d: memory still predicted", i)
	}
}

func TestSailorUpdateIsOneStepPerStage(t *testing.T) {
	t.Parallel()
	models, _, err := Bundled()
	require.NoError(t, err)
	c := models["OPT-350"].Compute[gpu.GH200]
	require.NotNil(t, c)
	assert.True(t, c.UpdatePerStage, "Sailor's GH200 profile repeats one optimizer step in every layer")

	lt := func(u ...float64) []planner.LayerTime {
		out := make([]planner.LayerTime, len(u))
		for i, v := range u {
			out[i] = planner.LayerTime{Fwd: 1, Bwd: 1, Update: v}
		}
		return out
	}
	compute := func(layers ...[]planner.LayerTime) *planner.Compute {
		c := &planner.Compute{Times: map[int]map[int][]planner.LayerTime{1: {}}}
		for i, l := range layers {
			c.Times[1][i+1] = l
		}
		return c
	}
	assert.True(t, uniformUpdate(compute(lt(2, 2, 2), lt(3, 3, 3))), "one value per entry, repeated")
	assert.False(t, uniformUpdate(compute(lt(2, 2, 2), lt(1, 2, 3))), "per-layer steps in one entry")
	assert.False(t, uniformUpdate(compute(lt(0, 0, 0))), "no step measured: nothing to count once")
}

// Sailor's simulator set wins over its planner set where both have an entry, the planner
// set fills in the rest, and the table says which came from where.
func TestSailorSimulatorSetWinsAndThePlannerSetFillsIn(t *testing.T) {
	t.Parallel()
	models, _, err := Bundled()
	require.NoError(t, err)
	sum := func(c *planner.Compute, tp, mbs int) float64 {
		var s float64
		for _, l := range c.Times[tp][mbs] {
			s += l.Fwd + l.Bwd
		}
		return s
	}
	gh := models["OPT-350"].Compute[gpu.GH200]
	assert.InDelta(t, 0.0825, sum(gh, 4, 1), 5e-4, "the simulator set's 82.5 ms, not the planner set's 103.8 ms")
	a80 := models["OPT-350"].Compute[gpu.A100_80]
	assert.NotEmpty(t, a80.Times[4][128], "mbs 128 is only in the planner set")
	assert.Equal(t, "measured: Sailor Planner/simulations/profiles_tmp.json (its simulator's set); tp 4 mbs 128 from Planner/sailor_planner/profiles/OPT-350/A100-80/profile.json", a80.Source)
	neo := models["GPT-Neo-2.7"].Compute[gpu.GH200]
	require.NotNil(t, neo, "a real GPT-Neo-2.7 profile on GH200, where the planner set has a copy of OPT-350's")
	assert.Len(t, neo.Times[4][1], 34)
	assert.True(t, neo.UpdatePerStage)
}

func TestSailorSimulatorSetBadInput(t *testing.T) {
	t.Parallel()
	dir := copySailor(t)
	sim := filepath.Join(dir, sailorSimProfiles)
	writeFile(t, sim, `{"OPT-350": {"A100-40": {"1": {"1": {"0": [1, 2]}}}}}`)
	_, err := ImportSailor(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "profiles_tmp.json (OPT-350 on A100-40)")
	assert.Contains(t, err.Error(), "has 2 numbers, want [fwd, bwd, update]")

	writeFile(t, sim, `{"OPT-350": {"A100-40": {"1": {"1": {"0": [1, 1, 1], "1": [1, 1, 1]}}}}, "GPT-9": {}}`)
	models, notes, err := ImportSailorWithNotes(dir)
	require.NoError(t, err)
	joined := strings.Join(notes, "\n")
	assert.Contains(t, joined, "(OPT-350 on A100-40): 2 layers, Planner/llm_info.json has 26; skipped")
	assert.Contains(t, joined, "model GPT-9 has no entry in Planner/llm_info.json, skipped")
	assert.Contains(t, models["OPT-350"].Compute[gpu.A100_40].Source, "Planner/sailor_planner/profiles/OPT-350/A100-40", "the planner set's table stays")

	writeFile(t, sim, `{"OPT-350": `)
	_, err = ImportSailor(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "profiles_tmp.json")
}
