package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/planner/profiles"
)

// writeTinyProfile writes what the profiler would for a one-block model (three planner
// layers) on an H200: every layer 1e6 parameters and 1e7 activation floats per sample,
// 0.5 ms forward and 1 ms backward per sample, 0.1 ms update; 16 bytes per parameter and
// 1 GiB overhead.
func writeTinyProfile(t *testing.T, dir string) {
	t.Helper()
	a := planner.Architecture{Name: "tiny-gpt", Layers: 1, Hidden: 64, Heads: 4, FFN: 256, Vocab: 128, SeqLen: 32}
	lm := planner.LayerMem{ParamsFloats: 1e6, ActOutputFloats: 2048, ActInputFloats: 2048, ActMemFloats: 1e7}
	times := map[int][]planner.LayerTime{}
	for _, mbs := range []int{1, 2} {
		lt := planner.LayerTime{Fwd: float64(mbs) * 0.5e-3, Bwd: float64(mbs) * 1e-3, Update: 0.1e-3}
		times[mbs] = []planner.LayerTime{lt, lt, lt}
	}
	m := planner.ModelProfile{Name: "tiny-gpt", SeqLen: 32, Mem: map[int][]planner.LayerMem{1: {lm, lm, lm}},
		Compute: map[gpu.Type]*planner.Compute{gpu.H200: {GPU: gpu.H200, Source: "measured: test",
			Times: map[int]map[int][]planner.LayerTime{1: times}}},
		MemoryModel: &planner.MemoryModel{BytesPerParam: 16, OverheadBytes: 1 << 30}}
	require.NoError(t, profiles.WriteModelFile(filepath.Join(dir, "tiny-gpt.json"), &profiles.ModelFile{Architecture: &a, ModelProfile: m}))
}

const (
	lineMBS2 = `{"name":"tiny-gpt","layers":1,"hidden":64,"heads":4,"ffn":256,"vocab":128,"seq_len":32,"dp":1,"pp":1,"tp":1,` +
		`"micro_batch":2,"global_batch":8,"stages":[{"first":0,"end":3}],"iter_seconds":0.033,"iter_seconds_all":[0.033,0.034],` +
		`"peak_mem_bytes":[1.3e9],"gpu":"NVIDIA H200","gpu_type":"H200-141","torch":"2.11.0","driver":"580.159.04"}`
	lineMBS1 = `{"name":"tiny-gpt","layers":1,"hidden":64,"heads":4,"ffn":256,"vocab":128,"seq_len":32,"dp":1,"pp":1,"tp":1,` +
		`"micro_batch":1,"global_batch":8,"stages":[{"first":0,"end":3}],"iter_seconds":0.0396,` +
		`"peak_mem_bytes":[1.25e9],"gpu":"NVIDIA H200","gpu_type":"H200-141","torch":"2.11.0","driver":"580.159.04"}`
	linePP2 = `{"name":"tiny-gpt","layers":1,"seq_len":32,"dp":1,"pp":2,"tp":1,"micro_batch":2,"global_batch":8,` +
		`"stages":[{"first":0,"end":2},{"first":2,"end":3}],"iter_seconds":0.03,"peak_mem_bytes":[1.4e9,1.1e9],"gpu_type":"H200-141"}`
)

func writeLines(t *testing.T, dir string, lines ...string) string {
	t.Helper()
	path := filepath.Join(dir, "measured.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	return path
}

func TestAccuracyAgainstHandComputedErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTinyProfile(t, dir)
	ms, err := readMeasurements(writeLines(t, t.TempDir(), lineMBS2, "", lineMBS1))
	require.NoError(t, err)
	rows, err := compareAll(ms, dir)
	require.NoError(t, err)
	require.Len(t, rows, 2)

	// mbs 2, 4 microbatches: 3·9 ms + 9 ms + 3·0.1 ms = 36.3 ms against 33 ms measured: +10%.
	// Memory: 3e6·16 + 3e7·4·2 + 2³⁰ = 1 361 741 824 bytes against 1.3e9: +4.749%.
	assert.InDelta(t, 0.0363, rows[0].predictedS, 1e-12)
	assert.InDelta(t, 10.0, rows[0].timeErr(), 1e-9)
	assert.InDelta(t, 1361741824.0, rows[0].predictedMem, 1e-3)
	assert.InDelta(t, 61741824.0/1.3e9*100, rows[0].memErr(), 1e-9)
	// mbs 1, 8 microbatches: 7·4.5 ms + 4.5 ms + 0.3 ms = 36.3 ms against 39.6 ms: −8.333%.
	// Memory: 3e6·16 + 3e7·4 + 2³⁰ = 1 241 741 824 bytes against 1.25e9: −0.661%.
	assert.InDelta(t, -3.3/39.6*100, rows[1].timeErr(), 1e-9)
	assert.InDelta(t, (1241741824.0-1.25e9)/1.25e9*100, rows[1].memErr(), 1e-9)
	assert.Equal(t, 3, rows[1].m.line, "blank lines count")

	s := summarize(rows)
	assert.Equal(t, 2, s.n)
	assert.InDelta(t, (10+3.3/39.6*100)/2, s.timeMedian, 1e-9)
	assert.InDelta(t, (61741824.0/1.3e9*100+(1.25e9-1241741824.0)/1.25e9*100)/2, s.memMedian, 1e-9)
}

func TestAccuracyPipelineUsesTheStagesAndTheLargestPeak(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTinyProfile(t, dir)
	ms, err := readMeasurements(writeLines(t, t.TempDir(), linePP2))
	require.NoError(t, err)
	rows, err := compareAll(ms, dir)
	require.NoError(t, err)

	// Stage 0 holds layers 0–1 and two microbatches in flight: 2e6·16 + 2e7·4·2·2 + 2³⁰;
	// stage 1 less. The measured peak is the larger stage's, 1.4e9.
	assert.InDelta(t, 1425741824.0, rows[0].predictedMem, 1e-3)
	assert.InDelta(t, 1.4e9, rows[0].measuredMem, 0)
	m, err := profiles.Load("tiny-gpt", dir)
	require.NoError(t, err)
	n, err := profiles.LoadNetwork(dir)
	require.NoError(t, err)
	r := planner.Replica{GPU: gpu.H200, TP: 1, Zone: "local", Region: "local", GPUsPerNode: 8}
	want, err := planner.Simulate(&planner.Plan{Model: "tiny-gpt", GlobalBatch: 8, MicroBatch: 2, Stages: []planner.Stage{
		{FirstLayer: 0, LastLayer: 1, Replicas: []planner.Replica{r}},
		{FirstLayer: 2, LastLayer: 2, Replicas: []planner.Replica{r}},
	}}, m, n)
	require.NoError(t, err)
	assert.InDelta(t, want.IterTime, rows[0].predictedS, 1e-15)
}

func TestAccuracyPrintsTheTable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTinyProfile(t, dir)
	measured := writeLines(t, t.TempDir(), lineMBS2, lineMBS1)

	var out bytes.Buffer
	require.NoError(t, run([]string{"-profiles", dir, "-measured", measured}, &out))
	text := out.String()
	assert.Contains(t, text, "measured on NVIDIA H200 (H200-141), torch 2.11.0, driver 580.159.04")
	assert.Contains(t, text, "tiny-gpt dp1/pp1/tp1 mbs 2 gbs 8")
	assert.Regexp(t, `0\.0330\s+0\.0363\s+\+10\.0%\s+1\.21\s+1\.27\s+\+4\.7%`, text)
	assert.Contains(t, text, "median absolute error over 2 configurations: time 9.2%, peak memory 2.7% (goal ≤ 5%: time NOT met, memory met)")
	assert.NotContains(t, text, "‡")

	out.Reset()
	require.NoError(t, run([]string{"-profiles", dir, "-measured", measured, "-markdown"}, &out))
	md := out.String()
	assert.Contains(t, md, "| config | measured s/iter | predicted s/iter | time error | measured peak GiB | predicted peak GiB | memory error |\n|---|---:|")
	assert.Contains(t, md, "| tiny-gpt dp1/pp1/tp1 mbs 2 gbs 8 | 0.0330 | 0.0363 | +10.0% | 1.21 | 1.27 | +4.7% |")
	assert.Contains(t, md, "**median absolute error over 2 configurations: time 9.2%, peak memory 2.7%**")
}

func TestAccuracyNamesTheLineItCannotCompare(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTinyProfile(t, dir)
	for _, c := range []struct {
		name  string
		lines []string
		want  []string
	}{
		{"unknown model", []string{lineMBS2, strings.Replace(lineMBS1, "tiny-gpt", "huge-gpt", 1)},
			[]string{"line 2 (huge-gpt dp1/pp1/tp1 mbs 1 gbs 8)", `unknown model "huge-gpt"`}},
		{"unprofiled micro-batch", []string{strings.Replace(lineMBS1, `"micro_batch":1`, `"micro_batch":4`, 1)},
			[]string{"line 1", "simulating", "H200-141"}},
		{"other sequence length", []string{strings.Replace(lineMBS1, `"seq_len":32`, `"seq_len":64`, 1)},
			[]string{"line 1", "sequence length 32, the measurement ran 64"}},
		{"malformed", []string{lineMBS2, lineMBS1, `{"name":`}, []string{"line 3: parsing the measurement"}},
		{"no time", []string{strings.Replace(lineMBS1, `"iter_seconds":0.0396`, `"iter_seconds":null`, 1)},
			[]string{"line 1 (tiny-gpt)", "no measured iteration time"}},
		{"stages", []string{strings.Replace(lineMBS1, `"pp":1`, `"pp":2`, 1)}, []string{"1 stages for pp 2"}},
		{"coverage", []string{strings.Replace(lineMBS1, `"end":3`, `"end":2`, 1)}, []string{"the stages end at layer 2, want 3"}},
		{"peaks", []string{strings.Replace(lineMBS1, `[1.25e9]`, `[1.25e9,1e9]`, 1)}, []string{"2 peak_mem_bytes entries for 1 stages"}},
		{"unknown GPU", []string{strings.Replace(lineMBS1, `"gpu_type":"H200-141"`, `"gpu_type":"H201"`, 1)}, []string{`unknown gpu_type "H201"`}},
		{"empty", []string{""}, []string{"holds no measurements"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			err := run([]string{"-profiles", dir, "-measured", writeLines(t, t.TempDir(), c.lines...)}, &out)
			require.Error(t, err)
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	var out bytes.Buffer
	assert.ErrorContains(t, run([]string{"-profiles", dir}, &out), "-profiles and -measured are required")
}
