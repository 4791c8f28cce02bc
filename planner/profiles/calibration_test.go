package profiles

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

// calibrationRow compares derived with measured compute for one model on one GPU type.
type calibrationRow struct {
	model string
	gpu   gpu.Type
	// entries is the number of (TP, microbatch) pairs compared.
	entries int
	// Relative errors (derived/measured − 1) of the blocks' forward+backward time, of the
	// whole model's forward+backward time, and of the whole model's optimizer step (only
	// where Sailor measured one).
	blockMedian, blockMaxAbs float64
	modelMedian, modelMaxAbs float64
	headMedian               float64
	updateMedian             float64
	hasUpdate                bool
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return math.NaN()
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func maxAbs(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

// calibrate derives compute for every measured (model, GPU) of the bundle with the
// architecture Sailor profiled and compares.
func calibrate(t *testing.T) []calibrationRow {
	t.Helper()
	models, _, err := Bundled()
	require.NoError(t, err)
	var rows []calibrationRow
	for _, name := range planner.BuiltinModels() {
		m := models[name]
		a, ok := sailorArchitecture(name)
		require.True(t, ok)
		for _, g := range sortedKeys(m.Compute) {
			meas := m.Compute[g]
			spec, ok := planner.Spec(g)
			if !ok {
				require.False(t, gpu.Known(g), "%s has no datasheet", g)
				continue // a GPU known by its profile alone: nothing to derive it from
			}
			row := calibrationRow{model: name, gpu: g}
			var blockErr, modelErr, headErr, updateErr []float64
			for _, tp := range sortedKeys(meas.Times) {
				for _, mbs := range sortedKeys(meas.Times[tp]) {
					mt := meas.Times[tp][mbs]
					dt := planner.DeriveCompute(a, spec, []int{tp}, []int{mbs}).Times[tp][mbs]
					require.Len(t, dt, len(mt))
					var mb, db, mm, dm, mu, du float64
					for i := range mt {
						mm += mt[i].Fwd + mt[i].Bwd
						dm += dt[i].Fwd + dt[i].Bwd
						mu += mt[i].Update
						du += dt[i].Update
						if i >= 1 && i <= a.Layers {
							mb += mt[i].Fwd + mt[i].Bwd
							db += dt[i].Fwd + dt[i].Bwd
						}
					}
					last := len(mt) - 1
					headErr = append(headErr, (dt[last].Fwd+dt[last].Bwd)/(mt[last].Fwd+mt[last].Bwd)-1)
					blockErr = append(blockErr, db/mb-1)
					modelErr = append(modelErr, dm/mm-1)
					if mu > 0 {
						updateErr = append(updateErr, du/mu-1)
					}
				}
			}
			row.entries = len(blockErr)
			row.blockMedian, row.blockMaxAbs = median(blockErr), maxAbs(blockErr)
			row.modelMedian, row.modelMaxAbs = median(modelErr), maxAbs(modelErr)
			row.headMedian = median(headErr)
			if len(updateErr) > 0 {
				row.hasUpdate = true
				row.updateMedian = median(updateErr)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

func calibrationTable(rows []calibrationRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| model | GPU | entries | blocks median | blocks max abs | model median | model max abs | head median | update median |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		upd := "not measured"
		if r.hasUpdate {
			upd = fmt.Sprintf("%+.0f%%", 100*r.updateMedian)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %+.0f%% | %.0f%% | %+.0f%% | %.0f%% | %+.0f%% | %s |\n", r.model, r.gpu, r.entries,
			100*r.blockMedian, 100*r.blockMaxAbs, 100*r.modelMedian, 100*r.modelMaxAbs, 100*r.headMedian, upd)
	}
	return b.String()
}

func TestDerivedVersusMeasured(t *testing.T) {
	rows := calibrate(t)
	t.Logf("derived/measured − 1 per (TP, microbatch) entry:\n%s", calibrationTable(rows))
}

// TestDerivedErrorBounds pins the calibration: errors stay where docs/profiles.md says.
func TestDerivedErrorBounds(t *testing.T) {
	type bound struct{ median, max float64 }
	// The fitted, fully measured profiles (Sailor's with optimizer times), held-out ones,
	// and the two A100-40 profiles that look computed from FP32 throughput (round 0.1 ms
	// values, no optimizer times, 16-18 TFLOPS on a 312 TFLOPS GPU), which are only logged.
	bounds := map[string]bound{
		"OPT-350/A100-40": {0.05, 0.15}, "GPT-Neo-2.7/A100-40": {0.05, 0.15},
		"OPT-350/V100-16": {0.05, 0.15}, "GPT-Neo-2.7/V100-16": {0.05, 0.15},
		"OPT-350/GH200-96": {0.10, 0.30}, "OPT-30/GH200-96": {0.10, 0.30}, "LLAMA-3-8/GH200-96": {0.10, 0.30},
		"GPT-Neo-2.7/GH200-96": {0.10, 0.30}, // held out: only in Sailor's simulator set
		"OPT-350/A100-80":      {0.15, 0.30}, "GPT-Neo-2.7/A100-80": {0.15, 0.25},
		"OPT-30/V100-16": {0.10, 0.10}, "LLAMA-3-8/V100-16": {0.10, 0.10},
	}
	outliers := map[string]bool{"OPT-30/A100-40": true, "LLAMA-3-8/A100-40": true}
	// Optimizer steps only Sailor's simulator set has, rounded to 0.1 ms like the computed-
	// looking A100-40 profiles: compared in the table, not bounded.
	roundedUpdates := map[string]bool{"OPT-30/V100-16": true, "LLAMA-3-8/V100-16": true}
	for _, r := range calibrate(t) {
		key := r.model + "/" + string(r.gpu)
		if outliers[key] {
			require.Less(t, r.modelMedian, -0.5, "%s: Sailor's numbers there are 3-5x slower than any measured A100", key)
			continue
		}
		b, ok := bounds[key]
		require.True(t, ok, "no bound for %s", key)
		require.LessOrEqual(t, math.Abs(r.blockMedian), b.median, key)
		require.LessOrEqual(t, r.blockMaxAbs, b.max, key)
		require.LessOrEqual(t, math.Abs(r.modelMedian), b.median+0.05, key)
		require.LessOrEqual(t, r.modelMaxAbs, b.max+0.05, key)
		if r.hasUpdate && !roundedUpdates[key] {
			require.LessOrEqual(t, math.Abs(r.updateMedian), 0.25, key)
		}
	}
}
