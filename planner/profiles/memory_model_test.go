package profiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

// calibratedFile is a one-block model as a profiler writes it, with its measured memory
// model: 16 bytes per parameter (fp32 weights and gradients, fused Adam), 1.5 GB overhead.
const calibratedFile = `{
  "format": "schooner.model-profile/v1",
  "architecture": {"name": "calib-gpt", "layers": 1, "hidden": 256, "heads": 8, "ffn": 1024,
                   "vocab": 1000, "seq_len": 128, "tied_embeddings": false},
  "name": "calib-gpt",
  "seq_len": 128,
  "memory_model": {"bytes_per_param": 16, "overhead_bytes": 1.5e9},
  "mem": {"1": [
    {"params_floats": 1000, "act_output_floats": 10, "act_input_floats": 10, "act_mem_floats": 100},
    {"params_floats": 2000, "act_output_floats": 10, "act_input_floats": 10, "act_mem_floats": 200},
    {"params_floats": 3000, "act_output_floats": 10, "act_input_floats": 10, "act_mem_floats": 300}
  ]},
  "compute": {"H200-141": {"gpu": "H200-141", "derived": false, "source": "measured: test",
    "times": {"1": {"1": [
      {"fwd": 0.001, "bwd": 0.002, "update": 0.0001},
      {"fwd": 0.001, "bwd": 0.002, "update": 0.0001},
      {"fwd": 0.001, "bwd": 0.002, "update": 0.0001}
    ]}}}}
}`

func TestLoadKeepsTheMemoryModel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "calib.json"), []byte(calibratedFile), 0o644))
	want := &planner.MemoryModel{BytesPerParam: 16, OverheadBytes: 1.5e9}

	f, err := ReadModelFile(filepath.Join(dir, "calib.json"))
	require.NoError(t, err)
	assert.Equal(t, want, f.MemoryModel)

	// Load derives memory for more TP degrees and compute for other GPUs; the calibration
	// stays, and the simulator uses it.
	m, err := Load("calib-gpt", dir)
	require.NoError(t, err)
	assert.Equal(t, want, m.MemoryModel)
	assert.True(t, m.Compute[gpu.A100_40].Derived, "compute was derived for other GPUs")
	got, ok := planner.PeakMemory(m, gpu.A100_40, 1, 1, 0, 2, 0, 1, 1)
	require.True(t, ok)
	assert.InDelta(t, 6000*16+600*4+1.5e9, got, 1e-6)

	// Written back, it survives; a profile without one writes no memory_model at all.
	path := filepath.Join(t.TempDir(), "back.json")
	require.NoError(t, WriteModel(path, m))
	back, err := ReadModel(path)
	require.NoError(t, err)
	assert.Equal(t, want, back.MemoryModel)
	require.NoError(t, WriteModel(path, tiny()))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "memory_model")
}

func TestLoadKeepsTheMemoryModelOfABuiltinModel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bm := planner.BuildModel(mustArch(t, "OPT-350"), []gpu.Type{gpu.H200}, []int{1}, []int{1})
	bm.Name = "OPT-350M" // an alias: Load renames it and takes the built-in architecture
	bm.Compute[gpu.H200].Derived = false
	bm.MemoryModel = &planner.MemoryModel{BytesPerParam: 16, OverheadBytes: 2e9}
	require.NoError(t, WriteModel(filepath.Join(dir, "opt.json"), bm))

	m, err := Load("OPT-350", dir)
	require.NoError(t, err)
	assert.Equal(t, &planner.MemoryModel{BytesPerParam: 16, OverheadBytes: 2e9}, m.MemoryModel)

	bundled, err := Load("OPT-350", "")
	require.NoError(t, err)
	require.NotNil(t, bundled.MemoryModel, "Sailor's data carries its platform's memory model")
	assert.Equal(t, planner.TrainingBytesPerParam, int(bundled.MemoryModel.BytesPerParam))
	assert.Equal(t, 4.76e9+300e6, bundled.MemoryModel.Overhead(gpu.GH200), "Sailor's simulator's GH200 footprint")
	assert.Equal(t, planner.MemOverheadBytes, bundled.MemoryModel.Overhead(gpu.V100), "its planner's 2-3 GB elsewhere")
}

func TestTheOverheadOfAGPUTypeReachesEveryMemoryPrediction(t *testing.T) {
	t.Parallel()
	m := tiny()
	m.MemoryModel = &planner.MemoryModel{BytesPerParam: 16, OverheadBytes: 1e9, OverheadByGPU: map[gpu.Type]float64{gpu.GH200: 4e9}}
	low, ok := planner.PeakMemory(m, gpu.A100_40, 1, 1, 0, 1, 0, 1, 1)
	require.True(t, ok)
	high, ok := planner.PeakMemory(m, gpu.GH200, 1, 1, 0, 1, 0, 1, 1)
	require.True(t, ok)
	assert.InDelta(t, 3e9, high-low, 1, "the GH200's own overhead replaces the model-wide one")
	got, ok := planner.NewSim(m, nil).StagePeakMemory(gpu.GH200, 1, 1, 0, 1, 0, 1, 1)
	require.True(t, ok)
	assert.Equal(t, high, got)
}

func TestCloneModelCopiesTheMemoryModel(t *testing.T) {
	t.Parallel()
	m := tiny()
	m.MemoryModel = &planner.MemoryModel{BytesPerParam: 16, OverheadBytes: 1e9, OverheadByGPU: map[gpu.Type]float64{gpu.GH200: 5e9}}
	c := cloneModel(m)
	require.Equal(t, m.MemoryModel, c.MemoryModel)
	c.MemoryModel.BytesPerParam = 20
	c.MemoryModel.OverheadByGPU[gpu.GH200] = 1
	assert.Equal(t, 16.0, m.MemoryModel.BytesPerParam, "the clone is deep")
	assert.Equal(t, 5e9, m.MemoryModel.OverheadByGPU[gpu.GH200], "the clone is deep")
}

func TestReadModelRejectsABadMemoryModel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, model, want string
	}{
		{"no cost per parameter", `{"bytes_per_param": 0, "overhead_bytes": 1e9}`, "memory_model: bytes_per_param must be positive, got 0"},
		{"negative overhead", `{"bytes_per_param": 16, "overhead_bytes": -1}`, "memory_model: overhead_bytes is -1"},
		{"unknown field", `{"bytes_per_param": 16, "overhead": 1}`, `unknown field "overhead"`},
		{"negative overhead on a GPU", `{"bytes_per_param": 16, "overhead_bytes": 1e9, "overhead_by_gpu": {"H100-80": -2}}`, "memory_model: overhead_by_gpu H100-80 is -2"},
		{"bad GPU name", `{"bytes_per_param": 16, "overhead_bytes": 1e9, "overhead_by_gpu": {"h 100": 1e9}}`, `memory_model: overhead_by_gpu: "h 100" is not a GPU type name`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			raw := strings.Replace(calibratedFile, `{"bytes_per_param": 16, "overhead_bytes": 1.5e9}`, c.model, 1)
			path := filepath.Join(t.TempDir(), "calib.json")
			require.NoError(t, os.WriteFile(path, []byte(raw), 0o644))
			_, err := ReadModelFile(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), path)
		})
	}
}
