package main

import (
	"fmt"
	"io"
	"time"

	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/policy"
	"github.com/schooner-ml/schooner/report"
)

// simSummary is one policy over the simulator's starts.
type simSummary struct {
	Policy string `json:"policy"`
	// Ratio is the cost over the same stages on on-demand machines; Available the share of
	// the window every stage had a ready worker.
	MedianRatio     float64             `json:"median_ratio"`
	P90Ratio        float64             `json:"p90_ratio"`
	MedianAvailable float64             `json:"median_available"`
	P10Available    float64             `json:"p10_available"`
	Preemptions     int                 `json:"preemptions"`
	Returns         int                 `json:"returns_to_spot"`
	Runs            []policy.ServingRun `json:"runs"`
}

// bundledMarket is the bundled traces as the policy simulator reads them.
func bundledMarket() (*policy.Market, error) {
	traces, err := sim.BundledTraces()
	if err != nil {
		return nil, err
	}
	return policy.NewMarket("bundled "+sim.BundledTraceSet, traces)
}

// deployment is the bench's: two stages, the market's AWS timings.
func deployment(length time.Duration) policy.Serving {
	return policy.Serving{Stages: 2, Length: length}
}

// simulate runs every serving policy from starts spread over the traces (the last start
// leaves a whole window).
func simulate(starts int, window time.Duration) ([]simSummary, error) {
	m, err := bundledMarket()
	if err != nil {
		return nil, err
	}
	if starts < 1 || window <= 0 || window >= m.Length {
		return nil, fmt.Errorf("-starts must be positive and -window shorter than the traces (%s)", m.Length)
	}
	var out []simSummary
	for _, p := range policy.ServePolicies {
		sum := simSummary{Policy: p}
		var ratios, avail []float64
		for k := range starts {
			at := time.Duration(int64(m.Length-window) / int64(starts) * int64(k)).Truncate(m.Gap)
			r, err := policy.SimulateServing(m, deployment(window), p, at)
			if err != nil {
				return nil, err
			}
			sum.Runs = append(sum.Runs, r)
			ratios, avail = append(ratios, r.Ratio), append(avail, r.Available)
			sum.Preemptions += r.Preemptions
			sum.Returns += r.Returns
		}
		sum.MedianRatio, sum.P90Ratio = report.Percentile(ratios, 50), report.Percentile(ratios, 90)
		sum.MedianAvailable, sum.P10Available = report.Percentile(avail, 50), report.Percentile(avail, 10)
		out = append(out, sum)
	}
	return out, nil
}

// sameWindow is each policy simulated on the stretch the stack ran.
func sameWindow(start, length time.Duration) ([]policy.ServingRun, error) {
	m, err := bundledMarket()
	if err != nil {
		return nil, err
	}
	var out []policy.ServingRun
	for _, p := range policy.ServePolicies {
		r, err := policy.SimulateServing(m, deployment(length), p, start)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func printSims(w io.Writer, sums []simSummary) {
	fmt.Fprintln(w, "| policy | cost against on-demand: median / p90 | available: median / p10 | preemptions | returns to spot |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|")
	for _, s := range sums {
		fmt.Fprintf(w, "| %s | %.2f / %.2f | %.4f / %.4f | %d | %d |\n", s.Policy, s.MedianRatio, s.P90Ratio,
			s.MedianAvailable, s.P10Available, s.Preemptions, s.Returns)
	}
}

func printSimRuns(w io.Writer, runs []policy.ServingRun) {
	fmt.Fprintln(w, "| policy | cost | against on-demand | available | preemptions | returns to spot |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, r := range runs {
		fmt.Fprintf(w, "| %s | $%.3f | %.2f | %.4f | %d | %d |\n", r.Policy, r.CostUSD, r.Ratio, r.Available, r.Preemptions, r.Returns)
	}
}
