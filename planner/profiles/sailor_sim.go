package profiles

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/schooner-ml/schooner/gpu"
	"github.com/schooner-ml/schooner/planner"
)

// mergeSailorSimProfiles adds Sailor's second profile set, Planner/simulations/
// profiles_tmp.json ({model: {gpu: {mbs: {tp: {layer: [fwd, bwd, update]}}}}}), to the
// models imported from its planner's set. Sailor validated its simulator against measured
// runs with this set, not with the planner's; the two agree within 0.5% on most entries but
// not everywhere (OPT-350 on GH200 at mbs 1 and TP 4: 82.5 ms against the planner set's
// 103.8 ms; OPT-350 on A100-80 at small micro-batches), and only this set has a real
// GPT-Neo-2.7 profile on GH200 and more TP degrees and micro-batch sizes. So, per model and
// GPU type, its entries win, the planner set's fill in the (TP, mbs) pairs it lacks, and the
// table's Source says which came from where. A tree without the file imports as before.
func mergeSailorSimProfiles(src sailorSource, byDir map[string]*planner.ModelProfile) ([]string, error) {
	var raw map[string]map[string]sailorTable
	if err := src.readJSON(sailorSimProfiles, &raw); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	file := src.name(sailorSimProfiles)
	var notes []string
	for _, name := range sortedKeys(raw) {
		m := byDir[name]
		if m == nil {
			notes = append(notes, fmt.Sprintf("%s: model %s has no entry in %s, skipped", file, name, sailorLLMInfo))
			continue
		}
		for _, gname := range sortedKeys(raw[name]) {
			where := fmt.Sprintf("%s (%s on %s)", file, name, gname)
			g, ok := sailorGPU(gname)
			if !ok {
				notes = append(notes, fmt.Sprintf("%s: %q is not a GPU type name, skipped", where, gname))
				continue
			}
			c, layers, err := sailorComputeOf(raw[name][gname], where, g, "measured: Sailor "+sailorSimProfiles+" (its simulator's set)")
			if err != nil {
				return nil, err
			}
			if layers != m.NumLayers() {
				notes = append(notes, fmt.Sprintf("%s: %d layers, %s has %d; skipped", where, layers, sailorLLMInfo, m.NumLayers()))
				continue
			}
			if m.Compute[g] == nil && !gpu.Known(g) {
				notes = append(notes, profileOnlyNote(where, g))
			}
			fillIn(c, m.Compute[g])
			c.UpdatePerStage = uniformUpdate(c)
			notes = append(notes, fillMissingMem(m, c, where)...)
			m.Compute[g] = c
		}
	}
	return notes, nil
}

// fillIn adds to c the (TP, mbs) entries of fromPlanner that c lacks, and says so in c.Source.
func fillIn(c, fromPlanner *planner.Compute) {
	if fromPlanner == nil {
		return
	}
	var added []string
	for _, tp := range sortedKeys(fromPlanner.Times) {
		for _, mbs := range sortedKeys(fromPlanner.Times[tp]) {
			if _, ok := c.Times[tp][mbs]; ok {
				continue
			}
			if c.Times[tp] == nil {
				c.Times[tp] = map[int][]planner.LayerTime{}
			}
			c.Times[tp][mbs] = slices.Clone(fromPlanner.Times[tp][mbs])
			added = append(added, fmt.Sprintf("tp %d mbs %d", tp, mbs))
		}
	}
	if len(added) > 0 {
		c.Source += "; " + strings.Join(added, ", ") + " from " + strings.TrimPrefix(fromPlanner.Source, "measured: Sailor ")
	}
}
