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
// needs its baseline. In a partial study (one interrupted, its missing steps listed) such a
// run is left out instead: its baseline is among the missing steps, and the rows it has stand.
func Analyze(s interference.Study) ([]Row, error) {
	base := baselinesOf(s)
	var rows []Row
	for _, r := range s.Runs {
		if r.Mechanism.Kind.Baseline() {
			continue
		}
		if s.Partial() && !base.has(r.Pair) {
			continue
		}
		row, err := base.row(r.Pair, r.LC, r.BE, r.Mechanism.LCInChild())
		if err != nil {
			return nil, fmt.Errorf("%s under %s: %w", r.Pair, r.Mechanism, err)
		}
		row.Mechanism = r.Mechanism
		rows = append(rows, row)
	}
	markFronts(rows)
	return rows, nil
}

// RowAgainst is the row of a pair measured outside the study (schooner's colocation runtime,
// say: its Mechanism is left zero) against the study's dedicated runs of the same workloads.
// lcInChild says the latency-critical side ran as a process of its own (the runtime runs each
// program so): its baseline is then the study's dedicated-process run, where it has one.
func RowAgainst(s interference.Study, p interference.Pair, lc *interference.Latency, be *interference.Throughput, lcInChild bool) (Row, error) {
	return baselinesOf(s).row(p, lc, be, lcInChild)
}

// baselines are a study's dedicated runs by workload name; lcInChild are its latency-critical
// workloads alone in a process of their own (studies that probed MPS; older ones have none).
type baselines struct {
	lc, lcInChild map[string]*interference.Latency
	be            map[string]*interference.Throughput
}

func baselinesOf(s interference.Study) baselines {
	b := baselines{lc: map[string]*interference.Latency{}, lcInChild: map[string]*interference.Latency{},
		be: map[string]*interference.Throughput{}}
	for _, r := range s.Runs {
		if r.Mechanism.Kind == interference.DedicatedProcess && r.LC != nil {
			b.lcInChild[r.Pair.LC] = r.LC
		}
		if r.Mechanism.Kind != interference.Dedicated {
			continue
		}
		if r.LC != nil {
			b.lc[r.Pair.LC] = r.LC
		}
		if r.BE != nil {
			b.be[r.Pair.BE] = r.BE
		}
	}
	return b
}

// has is true when both of p's workloads were measured alone.
func (b baselines) has(p interference.Pair) bool { return b.lc[p.LC] != nil && b.be[p.BE] != nil }

// row is a shared measurement of p against its workloads alone; with lcInChild the
// latency-critical side is against its run alone in a process of its own, where the study has
// one (a study without falls back to the in-process run, as before such runs existed).
func (b baselines) row(p interference.Pair, lc *interference.Latency, be *interference.Throughput, lcInChild bool) (Row, error) {
	aloneLC, aloneBE := b.lc[p.LC], b.be[p.BE]
	if own := b.lcInChild[p.LC]; lcInChild && own != nil {
		aloneLC = own
	}
	if aloneLC == nil || aloneBE == nil {
		return Row{}, fmt.Errorf("the study has no dedicated run of %s", missing(aloneLC == nil, p))
	}
	row := Row{Pair: p, LCP50x: lc.P50Ms / aloneLC.P50Ms, LCP99x: lc.P99Ms / aloneLC.P99Ms, LCP99Ms: lc.P99Ms}
	if aloneBE.PerSecond > 0 {
		row.BEFraction = be.PerSecond / aloneBE.PerSecond
	}
	return row, nil
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
