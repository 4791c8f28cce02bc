// Command colocation reports issue 18's table from what bench/colocation/h200.sh wrote: for each
// pair, every mechanism of the interference study and schooner's runtime, each against the same
// run's dedicated figures (HP p50 and p99 over alone, BE throughput over alone).
//
//	go run ./bench/colocation -dir bench/colocation/data-2026-12-xx-h200
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	gi "github.com/schooner-ml/schooner/gpu/interference"
	"github.com/schooner-ml/schooner/interference"
)

func main() {
	dir := flag.String("dir", "", "the folder bench/colocation/h200.sh wrote")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench/colocation -dir OUTDIR")
		os.Exit(2)
	}
	if err := report(os.Stdout, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "colocation report:", err)
		os.Exit(1)
	}
}

// Line is one row of the table.
type Line struct {
	Pair      interference.Pair `json:"pair"`
	Mechanism string            `json:"mechanism"`
	P50x      float64           `json:"hp_p50_x"`
	P99x      float64           `json:"hp_p99_x"`
	P99Ms     float64           `json:"hp_p99_ms"`
	BEShare   float64           `json:"be_share"`
	Note      string            `json:"note,omitempty"`
}

func report(w io.Writer, dir string) error {
	studies, err := filepath.Glob(filepath.Join(dir, "study", "*.json"))
	if err != nil || len(studies) != 1 {
		return fmt.Errorf("want one study under %s/study, found %d", dir, len(studies))
	}
	st, err := interference.ReadFile(studies[0])
	if err != nil {
		return err
	}
	lines, err := Lines(st, dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "GPU %s, driver %s, %s; study %s\n\n", st.GPU.Model, st.GPU.Driver, st.GPU.Runtime, filepath.Base(studies[0]))
	fmt.Fprintln(w, "| pair | mechanism | HP p50 × | HP p99 × | HP p99 ms | BE vs alone | note |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---|")
	for _, l := range lines {
		fmt.Fprintf(w, "| %s | %s | %.2f | %.2f | %.2f | %.0f%% | %s |\n", l.Pair, l.Mechanism, l.P50x, l.P99x, l.P99Ms, 100*l.BEShare, l.Note)
	}
	return json.NewEncoder(w).Encode(lines)
}

// Lines are the study's rows and, for each pair with a runtime run under dir, the runtime's.
func Lines(st interference.Study, dir string) ([]Line, error) {
	rows, err := gi.Analyze(st)
	if err != nil {
		return nil, err
	}
	var out []Line
	for _, r := range rows {
		out = append(out, Line{Pair: r.Pair, Mechanism: r.Mechanism.String(), P50x: r.LCP50x, P99x: r.LCP99x, P99Ms: r.LCP99Ms, BEShare: r.BEFraction})
	}
	for _, p := range st.Request.Pairs {
		base := filepath.Join(dir, "runtime-"+p.LC+"-"+p.BE)
		runs, err := filepath.Glob(base + "*")
		if err != nil {
			return nil, err
		}
		sort.Strings(runs)
		for _, run := range runs {
			// runtime-LC-BE, or runtime-LC-BE@TAG for a variant (h200.sh's RUNTIME_TAG); a
			// longer workload name that merely starts with BE is another pair's.
			tag, ok := strings.CutPrefix(strings.TrimPrefix(run, base), "@")
			if run != base && !ok {
				continue
			}
			mech := "schooner runtime"
			if tag != "" {
				mech += " (" + tag + ")"
			}
			l, err := runtimeLine(st, p, run)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				out = append(out, Line{Pair: p, Mechanism: mech, Note: "no result: " + err.Error()})
				continue
			}
			l.Mechanism = mech
			out = append(out, l)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pair.String() < out[j].Pair.String() })
	return out, nil
}

// runtimeLine is the runtime's row of a pair: the HP child's latencies and the BE child's
// throughput against the study's dedicated runs of the same workloads (the HP side against
// its run alone in a process of its own where the study has one: the runtime runs it so).
func runtimeLine(st interference.Study, p interference.Pair, dir string) (Line, error) {
	var hp hpLine
	if err := lastJSON(filepath.Join(dir, "hp.json"), &hp); err != nil {
		return Line{}, err
	}
	lc := hp.Latency
	var be interference.Throughput
	if err := lastJSON(filepath.Join(dir, "be.json"), &be); err != nil {
		return Line{}, err
	}
	whole, err := gi.RowAgainst(st, p, &lc, &be, true)
	if err != nil {
		return Line{}, err
	}
	l := Line{Pair: p, Mechanism: "schooner runtime", P50x: whole.LCP50x, P99x: whole.LCP99x, P99Ms: whole.LCP99Ms, BEShare: whole.BEFraction}
	var notes []string
	rate, err := windowRate(hp, filepath.Join(dir, "be.json"))
	switch {
	case err == nil:
		inWindow := be
		inWindow.PerSecond = rate
		r, err := gi.RowAgainst(st, p, &lc, &inWindow, true)
		if err != nil {
			return Line{}, err
		}
		l.BEShare = r.BEFraction
		notes = append(notes, fmt.Sprintf("BE over the HP window; over its whole run %.0f%%", 100*whole.BEFraction))
		if busy := hp.busyShare(); busy > 0 {
			notes = append(notes, fmt.Sprintf("HP requests in flight %.0f%% of the window: BE only in their gaps keeps at most %.0f%%",
				100*busy, 100*(1-busy)))
		}
	case errors.Is(err, errNoTimeline):
		notes = append(notes, "BE over its whole run (no timeline: HP idle for part of it)")
	default:
		return Line{}, err
	}
	var res struct {
		Evicted   bool             `json:"evicted"`
		MPS       bool             `json:"mps"`
		BEState   string           `json:"be_state"`
		BEWaitsBy map[string]int64 `json:"be_waits_by"`
		// Beside is how many BE kernels were admitted beside running HP work (nil: a runtime
		// that did not say).
		Beside *int64    `json:"be_admitted_beside"`
		HPShim shimStats `json:"hp_shim"`
		BEShim shimStats `json:"be_shim"`
	}
	if lastJSON(filepath.Join(dir, "result.json"), &res) == nil {
		notes = append(notes, fmt.Sprintf("MPS %v, BE %s", res.MPS, res.BEState))
		if held := heldBy(res.BEWaitsBy); held != "" {
			notes = append(notes, held)
		}
		if res.Beside != nil {
			notes = append(notes, fmt.Sprintf("%d BE kernels admitted beside HP work", *res.Beside))
		}
		if res.HPShim.Baseline == "events" {
			notes = append(notes, "HP slowdown over its own event times")
		}
		if e := res.HPShim.MinExcessNS; e != nil && *e >= 0 {
			notes = append(notes, fmt.Sprintf("HP events add ≥ %.1f µs to ncu's times", float64(*e)/1e3))
		}
		if g := res.HPShim.Gapped; g != nil && res.HPShim.Launches > 0 {
			timed := res.HPShim.Launches - res.HPShim.Untimed
			if res.HPShim.IdleSamples == "from-launch" {
				notes = append(notes, fmt.Sprintf("%d of %d timed HP launches found their stream idle: counted from their launch's return", *g, timed))
			} else {
				notes = append(notes, fmt.Sprintf("%d of %d timed HP launches left out of the slowdown signal (not seen queued: their time holds the launch's)", *g, timed))
			}
		}
		if res.HPShim.Launches > 0 && res.BEShim.Launches > 0 {
			notes = append(notes, fmt.Sprintf("the shim costs a launch %.1f µs (HP), %.1f µs (BE)",
				res.HPShim.perLaunchUS(), res.BEShim.perLaunchUS()))
		}
	}
	l.Note = strings.Join(notes, "; ")
	return l, nil
}

// shimStats are the launch shim's statistics the report reads (gpu/colocate/shim/gate.c).
type shimStats struct {
	MinExcessNS *int64 `json:"min_excess_ns"`
	ShimNS      int64  `json:"shim_ns"`
	Launches    int64  `json:"shim_launches"`
	Untimed     int64  `json:"untimed"`
	// Gapped is how many timed HP launches found their stream idle with a host gap too long to
	// ignore (nil: a shim from before the rule).
	Gapped *int64 `json:"gapped"`
	// IdleSamples is what the signal did with those launches: from-launch (counted from the
	// launch call's return) or leave-out; "" from a shim before 2026-12-07, which left them out.
	IdleSamples string `json:"idle_samples"`
	// Baseline is what the HP slowdown was measured against: profile (the default) or events
	// (SCHOONER_COLOCATE_HP_BASELINE=events).
	Baseline string `json:"hp_baseline"`
}

func (s shimStats) perLaunchUS() float64 { return float64(s.ShimNS) / float64(s.Launches) / 1e3 }

// heldBy says what held the BE side's waiting launches back, largest share first ("" when
// none waited): the budget, HP work of its bound, the SM limit, a pause.
func heldBy(waits map[string]int64) string {
	var total int64
	reasons := make([]string, 0, len(waits))
	for r, n := range waits {
		if n > 0 {
			total += n
			reasons = append(reasons, r)
		}
	}
	if total == 0 {
		return ""
	}
	sort.Slice(reasons, func(i, j int) bool {
		if waits[reasons[i]] != waits[reasons[j]] {
			return waits[reasons[i]] > waits[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%s %.0f%%", r, 100*float64(waits[r])/float64(total))
	}
	return "BE held by " + strings.Join(parts, ", ")
}

// lastJSON decodes the last JSON line of a file (a BE child prints {"ready": true} first); a
// whole-file JSON document is read as one.
func lastJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if json.Unmarshal(b, v) == nil {
		return nil
	}
	var last string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); strings.HasPrefix(t, "{") {
			last = t
		}
	}
	if last == "" {
		return fmt.Errorf("%s: no JSON line", path)
	}
	return json.Unmarshal([]byte(last), v)
}
