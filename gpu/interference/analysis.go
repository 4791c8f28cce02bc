package interference

import (
	"fmt"
	"sort"

	"github.com/schooner-ml/schooner/interference"
)

// Row is one pair under one mechanism against its workloads alone.
type Row struct {
	Pair      interference.Pair      `json:"pair"`
	Mechanism interference.Mechanism `json:"mechanism"`
	// LCP50x and LCP99x are the latency-critical side's p50 and p99 over its p50 and p99 alone.
	LCP50x  float64 `json:"lc_p50_slowdown"`
	LCP99x  float64 `json:"lc_p99_slowdown"`
	LCP99Ms float64 `json:"lc_p99_ms"`
	// BEFraction is the best-effort side's throughput over its throughput alone.
	BEFraction float64 `json:"be_throughput_fraction"`
	// OnFront: no other mechanism of the pair gives the best-effort side at least as much
	// throughput with a p99 slowdown at most as large (and one of them strictly better).
	OnFront bool `json:"on_front"`
}

// Analyze computes every shared run's row, pairs in the study's order and mechanisms in the
// order they were run. A pair whose workloads lack their dedicated runs is an error: a slowdown
// needs its baseline.
func Analyze(s interference.Study) ([]Row, error) {
	aloneLC := map[string]*interference.Latency{}
	aloneBE := map[string]*interference.Throughput{}
	for _, r := range s.Runs {
		if r.Mechanism.Kind != interference.Dedicated {
			continue
		}
		if r.LC != nil {
			aloneLC[r.Pair.LC] = r.LC
		}
		if r.BE != nil {
			aloneBE[r.Pair.BE] = r.BE
		}
	}
	var rows []Row
	for _, r := range s.Runs {
		if r.Mechanism.Kind == interference.Dedicated {
			continue
		}
		lc, be := aloneLC[r.Pair.LC], aloneBE[r.Pair.BE]
		if lc == nil || be == nil {
			return nil, fmt.Errorf("%s under %s: the study has no dedicated run of %s", r.Pair, r.Mechanism, missing(lc == nil, r.Pair))
		}
		row := Row{Pair: r.Pair, Mechanism: r.Mechanism, LCP50x: r.LC.P50Ms / lc.P50Ms, LCP99x: r.LC.P99Ms / lc.P99Ms,
			LCP99Ms: r.LC.P99Ms}
		if be.PerSecond > 0 {
			row.BEFraction = r.BE.PerSecond / be.PerSecond
		}
		rows = append(rows, row)
	}
	markFronts(rows)
	return rows, nil
}

func missing(lc bool, p interference.Pair) string {
	if lc {
		return p.LC
	}
	return p.BE
}

// markFronts sets OnFront within each pair.
func markFronts(rows []Row) {
	for i := range rows {
		rows[i].OnFront = true
		for j := range rows {
			if i == j || rows[j].Pair != rows[i].Pair {
				continue
			}
			a, b := rows[i], rows[j]
			if b.BEFraction >= a.BEFraction && b.LCP99x <= a.LCP99x && (b.BEFraction > a.BEFraction || b.LCP99x < a.LCP99x) {
				rows[i].OnFront = false
				break
			}
		}
	}
}

// Front is the pair's rows on its Pareto front, by best-effort throughput.
func Front(rows []Row, p interference.Pair) []Row {
	var out []Row
	for _, r := range rows {
		if r.Pair == p && r.OnFront {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].BEFraction < out[j].BEFraction })
	return out
}
