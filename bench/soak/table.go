package main

import (
	"fmt"
	"io"
)

// printTable shows this run, and the baseline beside it when there is one.
func printTable(w io.Writer, r result, base *result) {
	runs := []result{r}
	if base != nil {
		runs = []result{*base, r}
	}
	fmt.Fprintf(w, "\n%d jobs (%d at a time, %d iterations each) at time scale %g\n\n", r.Jobs, r.Batch, r.Iterations, r.TimeScale)
	fmt.Fprint(w, "| measurement |")
	for _, x := range runs {
		fmt.Fprintf(w, " %s |", x.Label)
	}
	fmt.Fprint(w, "\n|---|")
	for range runs {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	row := func(name string, f func(result) string) {
		fmt.Fprintf(w, "| %s |", name)
		for _, x := range runs {
			fmt.Fprintf(w, " %s |", f(x))
		}
		fmt.Fprintln(w)
	}
	row("jobs completed / state verified", func(x result) string {
		return fmt.Sprintf("%d / %d of %d", x.Completed, x.Verified, x.Jobs*max(1, len(x.Rounds)))
	})
	row("wall time of the jobs", func(x result) string { return fmt.Sprintf("%.0f s", x.JobsWall) })
	row("RSS: start → idle after", func(x result) string { return fmt.Sprintf("%.0f → %.0f MiB", x.Start.RSSMiB, x.After.RSSMiB) })
	row("heap in use: start → idle after", func(x result) string {
		return fmt.Sprintf("%.0f → %.0f MiB", x.Start.HeapInuseMiB, x.After.HeapInuseMiB)
	})
	row("live heap: start → idle after", func(x result) string {
		return fmt.Sprintf("%.0f → %.0f MiB", x.Start.HeapLiveMiB, x.After.HeapLiveMiB)
	})
	row("RSS with free pages returned: start → idle after", func(x result) string {
		return fmt.Sprintf("%.0f → %.0f MiB", x.Start.RSSFreedMiB, x.After.RSSFreedMiB)
	})
	row("goroutines: start → idle after", func(x result) string { return fmt.Sprintf("%d → %d", x.Start.Goroutines, x.After.Goroutines) })
	row("idle CPU: start → after (over the idle window)", func(x result) string {
		return fmt.Sprintf("%.1f%% → %.1f%% (%.0f s)", x.IdleStart.Percent, x.IdleAfter.Percent, x.IdleAfter.WallSeconds)
	})
	row("simulated node agents left", func(x result) string { return fmt.Sprintf("%d", x.After.NodeWorkers) })
	row("metric series: start → after", func(x result) string { return fmt.Sprintf("%d → %d", x.Start.MetricSeries, x.After.MetricSeries) })
	row("RSS (free pages returned) / live heap after each round", func(x result) string {
		if len(x.Rounds) == 0 {
			return "one round"
		}
		out := ""
		for i, rd := range x.Rounds {
			if i > 0 {
				out += ", "
			}
			out += fmt.Sprintf("%.0f (%.0f) / %.0f MiB", rd.After.RSSMiB, rd.After.RSSFreedMiB, rd.After.HeapLiveMiB)
		}
		return out
	})
	row("peak RSS", func(x result) string { return fmt.Sprintf("%.0f MiB", x.PeakRSSMiB) })
	row("graceful stop, a batch running", func(x result) string {
		if x.StopErr != "" {
			return fmt.Sprintf("%.1f s (%s)", x.StopSeconds, x.StopErr)
		}
		return fmt.Sprintf("%.1f s", x.StopSeconds)
	})
}
