package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/schooner-ml/schooner/policy"
)

// newProgress reports every quarter of the runs on w (nothing when quiet).
func newProgress(w io.Writer, quiet bool) func(done, total int) {
	if quiet {
		return nil
	}
	last := 0
	return func(done, total int) {
		if q := done * 4 / total; q > last {
			last = q
			fmt.Fprintf(w, "simulated %d of %d runs\n", done, total)
		}
	}
}

// printPolicyEval prints the market, the job, and per deadline a table of the policies with a
// bar of their median cost (the on-demand plan's cost is the mark at 1.0).
func printPolicyEval(w io.Writer, f *policyEvalFlags, job policy.Job, m *policy.Market, res *policy.Result) {
	fmt.Fprintf(w, "trace %s: %d zones (%s), %.0f h, tick %s; %s spot $%.4f/h, on-demand $%.2f/h (catalog prices, fixed)\n",
		m.Source, len(m.Zones), strings.Join(m.Zones, ", "), m.Length.Hours(), m.Gap, m.InstanceType,
		m.SpotPrice[m.Zones[0]], m.OnDemandPrice)
	fmt.Fprintf(w, "job: %s, global batch %d, %d iterations, at most %d GPUs, checkpoint every %d, restart %s; spot-only %.1f h\n",
		f.model, f.globalBatch, job.Iterations, job.MaxGPUs, f.every, f.restart, res.SpotOnly.Hours())
	fmt.Fprintf(w, "%d runs (%d starts) simulated in %s\n", len(res.Runs), len(res.Starts), res.Elapsed.Round(1e6))
	unfinished := false
	for i, base := range res.Baselines {
		factor := res.Deadlines[i]
		fmt.Fprintf(w, "\ndeadline %.2gx (%.1f h): the best on-demand plan is %d GPUs, %.1f h, $%.2f%s\n", factor,
			factor*res.SpotOnly.Hours(), base.GPUs, base.Duration.Hours(), base.CostUSD, missNote(base))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  policy\tmedian cost (| = on-demand)\tmedian\tp90\tmet deadline\ton-demand share\tunfinished")
		for _, s := range res.Summaries {
			if s.Deadline != factor {
				continue
			}
			bar, median, p90 := costBar(s.MedianRatio), fmt.Sprintf("%.2f", s.MedianRatio), fmt.Sprintf("%.2f", s.P90Ratio)
			if s.CostRuns == 0 {
				bar, median, p90 = "no run finished", "-", "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%.0f%%\t%.0f%%\t%d\n", s.Policy, bar, median, p90,
				100*s.Attainment, 100*s.OnDemandShare, s.Unfinished)
			unfinished = unfinished || s.Unfinished > 0
		}
		if i < len(res.Bounds) {
			b := res.Bounds[i]
			fmt.Fprintf(tw, "  omniscient bound\t%s\t%.2f\t%.2f\t%s\t\t\n", costBar(b.MedianRatio), b.MedianRatio, b.P90Ratio, boundNote(b, len(res.Starts)))
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\ncost is relative to the best on-demand plan for the deadline; simulated, not measured on a cloud")
	fmt.Fprintln(w, "omniscient bound: the least any policy could pay from each start if it knew the whole trace and its changes cost nothing; no policy that keeps every deadline has a median or p90 below it")
	if unfinished {
		fmt.Fprintln(w, "median and p90 are over the runs that finished: a run still unfinished at 4x its deadline did not do the job, and its bill is left out")
	}
}

// boundNote says from how many starts the deadline can be kept at all.
func boundNote(b policy.BoundSummary, starts int) string {
	if b.Infeasible == 0 {
		return "100%"
	}
	return fmt.Sprintf("%.0f%% at most", 100*float64(starts-b.Infeasible)/float64(starts))
}

func missNote(p policy.OnDemandPlan) string {
	if p.Met {
		return ""
	}
	return " (it misses the deadline: no plan is fast enough)"
}

// costBar draws a ratio on 20 characters per 1.0, with a mark at 1.0 (on-demand).
func costBar(ratio float64) string {
	const unit = 20
	n := int(ratio*unit + 0.5)
	n = min(max(n, 0), 2*unit)
	bar := []rune(strings.Repeat("█", n) + strings.Repeat(" ", max(unit+1-n, 0)))
	if n < unit {
		bar[unit] = '|'
	}
	return string(bar)
}
