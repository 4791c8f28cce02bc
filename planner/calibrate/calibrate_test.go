package calibrate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/profiles"
)

func plan(t *testing.T, g string, mbs, stages int) *planner.Plan {
	t.Helper()
	p := &planner.Plan{Model: "OPT-350", GlobalBatch: 32, MicroBatch: mbs}
	per := 26 / stages
	for s := 0; s < stages; s++ {
		last := (s+1)*per - 1
		if s == stages-1 {
			last = 25
		}
		p.Stages = append(p.Stages, planner.Stage{FirstLayer: s * per, LastLayer: last,
			Replicas: []planner.Replica{{GPU: gpu.Type(g), TP: 1, Zone: "us-central1-a", Region: "us-central1", GPUsPerNode: stages}}})
	}
	return p
}

// shipped loads the bundled OPT-350 profile and network profile, the ones every test calibrates.
func shipped(t *testing.T) (*planner.ModelProfile, *planner.Network) {
	t.Helper()
	m, err := profiles.Load("OPT-350", "")
	require.NoError(t, err)
	net, err := profiles.LoadNetwork("")
	require.NoError(t, err)
	return m, net
}

// measured makes a case of each plan as a cluster unlike the profile would measure it: the
// simulated iteration time times slower, and every stage's peak memory plus extra(plan).
func measured(t *testing.T, m *planner.ModelProfile, net *planner.Network, slower float64, extra func(*planner.Plan) float64, plans ...*planner.Plan) []Case {
	t.Helper()
	var cases []Case
	for i, p := range plans {
		est, err := planner.Simulate(p, m, net)
		require.NoError(t, err)
		c := Case{Name: string(rune('a' + i)), Plan: p, IterSeconds: slower * est.IterTime}
		for _, st := range est.Stages {
			c.PeakMemBytes = append(c.PeakMemBytes, st.PeakMemBytes+extra(p))
		}
		cases = append(cases, c)
	}
	return cases
}

// A cluster whose runs are 20% slower and hold 2 GiB more per GPU than the profile says: the
// calibration finds both, and the profile then predicts the runs.
func TestCalibrationFitsOverheadAndComputeFactor(t *testing.T) {
	m, net := shipped(t)
	cases := measured(t, m, net, 1.2, func(*planner.Plan) float64 { return 2 << 30 },
		plan(t, "A100-40", 1, 1), plan(t, "A100-40", 2, 2), plan(t, "A100-40", 4, 2))
	res, err := Calibrate(m, net, cases)
	require.NoError(t, err)
	assert.InDelta(t, 0.2/1.2, res.Before.Time, 0.01)
	assert.Less(t, res.After.Time, 0.01)
	assert.Less(t, res.After.Memory, 0.001)
	assert.InDelta(t, res.OverheadBefore+2<<30, res.OverheadBytes, 1)
	assert.Greater(t, res.TimeFactors[gpu.A100_40], 1.2, "compute takes more than 20% to make up the iteration")
	assert.Contains(t, res.Profile.Compute[gpu.A100_40].Source, "calibrated ×")
	assert.NotSame(t, m.Compute[gpu.A100_40], res.Profile.Compute[gpu.A100_40], "the input profile is left alone")
	est, err := planner.Simulate(cases[0].Plan, m, net)
	require.NoError(t, err)
	assert.InDelta(t, cases[0].IterSeconds/1.2, est.IterTime, 1e-9)
}

// Runs on a GPU type with an overhead of its own (Sailor's GH200) move that overhead, not the
// model-wide one the other types use, so a calibration on GH200 takes effect there.
func TestCalibrationMovesTheOverheadOfTheGPUTypeItRanOn(t *testing.T) {
	m, net := shipped(t)
	require.Contains(t, m.MemoryModel.OverheadByGPU, gpu.GH200)
	cases := measured(t, m, net, 1, func(p *planner.Plan) float64 {
		if p.Stages[0].Replicas[0].GPU == gpu.A100_40 {
			return -512 << 20
		}
		return 1 << 30
	}, plan(t, "GH200-96", 1, 1), plan(t, "GH200-96", 2, 2), plan(t, "A100-40", 2, 2))
	res, err := Calibrate(m, net, cases)
	require.NoError(t, err)
	was := m.MemoryModel.OverheadByGPU[gpu.GH200]
	assert.Equal(t, [2]float64{was, was + 1<<30}, res.GPUOverheads[gpu.GH200])
	assert.InDelta(t, res.OverheadBefore-512<<20, res.OverheadBytes, 1, "the A100's runs move the model-wide overhead")
	assert.Equal(t, was+1<<30, res.Profile.MemoryModel.Overhead(gpu.GH200))
	assert.Equal(t, was, m.MemoryModel.OverheadByGPU[gpu.GH200], "the input profile is left alone")
	assert.Less(t, res.After.Memory, 0.001)
}

func TestCalibrationRefusesOtherModelsAndNotesMixedPlans(t *testing.T) {
	m, net := shipped(t)
	other := plan(t, "A100-40", 1, 1)
	other.Model = "OPT-30"
	_, err := Calibrate(m, net, []Case{{Name: "x", Plan: other, IterSeconds: 1}})
	require.ErrorContains(t, err, "a plan of OPT-30")

	mixed := plan(t, "A100-40", 1, 2)
	mixed.Stages[1].Replicas[0].GPU = gpu.V100
	res, err := Calibrate(m, net, []Case{{Name: "mixed", Plan: mixed, IterSeconds: 1}})
	require.NoError(t, err)
	assert.Contains(t, res.Notes, "case mixed mixes GPU types: used for memory only")
	assert.Contains(t, res.Notes, "no case measured peak memory: the memory model is unchanged")
}

func TestReadCaseFileChecksWhatItReads(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	good := write("good.json", `{"plan": {"model": "OPT-350", "global_batch": 8, "micro_batch": 1, "stages": [{"first_layer": 0, "last_layer": 25,
		"replicas": [{"gpu": "A100-40", "tp": 1, "zone": "z", "region": "r", "gpus_per_node": 1}]}]}, "measured": {"iter_seconds": 2, "peak_mem_bytes": [1e10]}}`)
	c, err := ReadCaseFile(good)
	require.NoError(t, err)
	assert.Equal(t, "good.json", c.Name)
	assert.Equal(t, 2.0, c.IterSeconds)
	_, err = ReadCaseFile(write("t.json", `{"plan": {}, "measured": {}}`))
	require.ErrorContains(t, err, "iter_seconds must be positive")
	files, err := CaseFiles(dir)
	require.NoError(t, err)
	assert.Len(t, files, 2)
	// a mistyped directory, or a file, is said to be one (it read "no case files in ...")
	_, err = CaseFiles(filepath.Join(dir, "missing"))
	assert.ErrorContains(t, err, "no such file or directory")
	_, err = CaseFiles(good)
	assert.ErrorContains(t, err, "is a file")
}
