// Package placement decides from an interference study whether a best-effort job may share a
// latency-critical job's GPU (docs/colocation.md). It is pure: the Colocation workflow calls it
// directly, and so can the training and serving placement code.
package placement

import (
	"fmt"

	gi "github.com/schooner-ml/schooner/gpu/interference"
	"github.com/schooner-ml/schooner/interference"
)

// MinBEFraction is the least share of its dedicated throughput a BE side must keep under a
// mechanism for that mechanism to count as a way to share: less, and the BE job would do
// better waiting for a GPU of its own.
const MinBEFraction = 0.25

// Decision is placement's answer and its reason, naming the evidence.
type Decision struct {
	Allowed bool   `json:"allowed"`
	Via     string `json:"via,omitempty"` // the mechanism of the study that met the target
	Reason  string `json:"reason"`
}

// Place says whether a BE job of kind kinds.BE may share a GPU with an HP job of kind kinds.LC
// under a target HP p99 slowdown, from the study of that GPU: yes when some measured mechanism
// kept the HP p99 within the target while the BE side kept at least MinBEFraction of its
// throughput (the best such mechanism is named). A simulated study never places; a partial one
// (an interrupted study, its missing steps listed) places with the runs it has.
func Place(st interference.Study, kinds interference.Pair, target float64) Decision {
	if st.Simulated {
		return Decision{Reason: "the study is simulated (a model of a GPU): it cannot place a real job"}
	}
	rows, err := gi.Analyze(st)
	if err != nil {
		return Decision{Reason: fmt.Sprintf("the study cannot be analysed: %v", err)}
	}
	var best *gi.Row
	measured := 0
	for i, r := range rows {
		if r.Pair != kinds {
			continue
		}
		measured++
		if r.LCP99x <= target && r.BEFraction >= MinBEFraction && (best == nil || r.BEFraction > best.BEFraction) {
			best = &rows[i]
		}
	}
	switch {
	case measured == 0 && st.Partial():
		return Decision{Reason: fmt.Sprintf("the study of %s has no run of %s yet: the study is partial (%d steps missing); finish it with `schooner gpu interference run --local --resume`",
			st.GPU.Model, kinds, len(st.Missing))}
	case measured == 0:
		return Decision{Reason: fmt.Sprintf("the study of %s has no run of %s: run `schooner gpu interference run --pair %s+%s`", st.GPU.Model, kinds, kinds.LC, kinds.BE)}
	case best == nil:
		return Decision{Reason: fmt.Sprintf("on %s no measured mechanism kept %s's p99 within %.2f× with %s at %.0f%% or more of its throughput",
			st.GPU.Model, kinds.LC, target, kinds.BE, 100*MinBEFraction)}
	}
	reason := fmt.Sprintf("on %s, %s kept %s's p99 at %.2f× (target %.2f×) with %s at %.0f%% (%s)",
		st.GPU.Model, best.Mechanism, kinds.LC, best.LCP99x, target, kinds.BE, 100*best.BEFraction, runsBehind(st, *best))
	if best.LCP99x < 1 {
		// A ratio under 1 is no gain to count on: it is the two runs' noise (a launch-bound
		// program's latency is its host's), or the BE side keeping the GPU from idling, which
		// spares a launch-bound HP program the GPU's wake-up (a CNN request ran 1.5x faster
		// alone with the GPU kept busy, H100, 2026-12-07). Either way the margin under the
		// target is not known.
		reason += "; a p99 below the HP side's alone is run-to-run noise or the BE side keeping the GPU awake, not a gain, so the margin is not known"
	}
	return Decision{Allowed: true, Via: best.Mechanism.String(), Reason: reason}
}

// runsBehind says how many runs a row's figures are the median of, so a decision shows how
// much evidence it stands on.
func runsBehind(st interference.Study, r gi.Row) string {
	for _, run := range st.Runs {
		if run.Pair == r.Pair && run.Mechanism == r.Mechanism {
			if run.Repeats <= 1 {
				return "one run"
			}
			return fmt.Sprintf("median of %d runs", run.Repeats)
		}
	}
	return "runs not found"
}
