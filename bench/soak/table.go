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
	row("GOGC / GOMEMLIMIT", func(x result) string {
		if x.GOGC == 0 {
			return "–"
		}
		if x.GOMemLimitMiB == 0 {
			return fmt.Sprintf("%d / none", x.GOGC)
		}
		return fmt.Sprintf("%d / %.0f MiB", x.GOGC, x.GOMemLimitMiB)
	})
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
	memRows(row)
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
	row("after the embedded server's restart (-restart-server): RssAnon / heap unused / live heap", func(x result) string {
		a := x.AfterServerRestart
		if a == nil || a.Classes == nil {
			return "not restarted"
		}
		return fmt.Sprintf("%.1f / %.1f / %.1f MiB", a.RSSAnonMiB, a.Classes.HeapUnused, a.HeapLiveMiB)
	})
	row("peak RSS", func(x result) string { return fmt.Sprintf("%.0f MiB", x.PeakRSSMiB) })
	row("graceful stop, a batch running", func(x result) string {
		if x.StopErr != "" {
			return fmt.Sprintf("%.1f s (%s)", x.StopSeconds, x.StopErr)
		}
		return fmt.Sprintf("%.1f s", x.StopSeconds)
	})
}

// memRows shows where the idle process's memory is, start → after (measured with the free
// pages returned); "–" for runs recorded before the breakdown was.
func memRows(row func(string, func(result) string)) {
	mib := func(f func(sample) (float64, bool)) func(result) string {
		return func(x result) string {
			a, okA := f(x.Start)
			b, okB := f(x.After)
			if !okA || !okB {
				return "–"
			}
			return fmt.Sprintf("%.1f → %.1f MiB (%+.1f)", a, b, b-a)
		}
	}
	proc := func(f func(sample) float64) func(result) string {
		return mib(func(s sample) (float64, bool) { return f(s), s.RSSAnonMiB > 0 })
	}
	class := func(f func(*memClasses) float64) func(result) string {
		return mib(func(s sample) (float64, bool) {
			if s.Classes == nil {
				return 0, false
			}
			return f(s.Classes), true
		})
	}
	row("&nbsp;&nbsp;RssAnon (anonymous)", proc(func(s sample) float64 { return s.RSSAnonMiB }))
	row("&nbsp;&nbsp;RssFile (file-backed: the binary's pages)", proc(func(s sample) float64 { return s.RSSFileMiB }))
	row("&nbsp;&nbsp;RssShmem", proc(func(s sample) float64 { return s.RSSShmemMiB }))
	row("Go runtime: total mapped", class(func(c *memClasses) float64 { return c.Total }))
	row("&nbsp;&nbsp;heap objects (live)", class(func(c *memClasses) float64 { return c.HeapObjects }))
	row("&nbsp;&nbsp;heap unused (in spans with objects)", class(func(c *memClasses) float64 { return c.HeapUnused }))
	row("&nbsp;&nbsp;heap free (mapped, no objects)", class(func(c *memClasses) float64 { return c.HeapFree }))
	row("&nbsp;&nbsp;heap released (returned to the OS)", class(func(c *memClasses) float64 { return c.HeapReleased }))
	row("&nbsp;&nbsp;goroutine stacks (heap/stacks)", class(func(c *memClasses) float64 { return c.HeapStacks }))
	row("&nbsp;&nbsp;OS thread stacks", class(func(c *memClasses) float64 { return c.OSStacks }))
	row("&nbsp;&nbsp;metadata: mspan in use / all", func(x result) string {
		if x.Start.Classes == nil || x.After.Classes == nil {
			return "–"
		}
		a, b := x.Start.Classes, x.After.Classes
		return fmt.Sprintf("%.1f → %.1f / %.1f → %.1f MiB", a.MSpanInuse, b.MSpanInuse, a.Metadata(), b.Metadata())
	})
	row("&nbsp;&nbsp;metadata: mcache in use", class(func(c *memClasses) float64 { return c.MCacheInuse }))
	row("&nbsp;&nbsp;metadata: other", class(func(c *memClasses) float64 { return c.MetadataOther }))
	row("&nbsp;&nbsp;profiling buckets", class(func(c *memClasses) float64 { return c.ProfileBuckets }))
	row("&nbsp;&nbsp;other", class(func(c *memClasses) float64 { return c.Other }))
	row("Go runtime not released (total − released)", class(func(c *memClasses) float64 { return c.Resident() }))
	row("RssAnon − Go runtime not released (a lower bound on what is outside the Go runtime)", mib(func(s sample) (float64, bool) {
		if s.Classes == nil || s.RSSAnonMiB == 0 {
			return 0, false
		}
		return s.RSSAnonMiB - s.Classes.Resident(), true
	}))
	row("SQLite's malloc (modernc.org/libc), mapped", mib(func(s sample) (float64, bool) {
		if s.Libc == nil {
			return 0, false
		}
		return s.Libc.MappedMiB, true
	}))
}
