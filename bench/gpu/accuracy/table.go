package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

const gib = 1 << 30

// summary is what the table ends with: the median absolute errors over every row.
type summary struct {
	timeMedian, memMedian float64
	n                     int
}

func summarize(rows []row) summary {
	t := make([]float64, len(rows))
	m := make([]float64, len(rows))
	for i, r := range rows {
		t[i], m[i] = math.Abs(r.timeErr()), math.Abs(r.memErr())
	}
	return summary{timeMedian: median(t), memMedian: median(m), n: len(rows)}
}

// median of v (sorted in place); the mean of the middle two for an even count.
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	sort.Float64s(v)
	mid := len(v) / 2
	if len(v)%2 == 1 {
		return v[mid]
	}
	return (v[mid-1] + v[mid]) / 2
}

func verdict(median float64) string {
	if median <= goalPercent {
		return "met"
	}
	return "NOT met"
}

// marks are the footnote marks of a row's configuration.
func marks(r row) string {
	s := ""
	if r.derived {
		s += " †"
	}
	if !r.calibrated {
		s += " ‡"
	}
	return s
}

var header = []string{"config", "measured s/iter", "predicted s/iter", "time error", "measured peak GiB", "predicted peak GiB", "memory error"}

func cells(r row) []string {
	return []string{r.m.config() + marks(r),
		fmt.Sprintf("%.4f", r.measuredS), fmt.Sprintf("%.4f", r.predictedS), fmt.Sprintf("%+.1f%%", r.timeErr()),
		fmt.Sprintf("%.2f", r.measuredMem/gib), fmt.Sprintf("%.2f", r.predictedMem/gib), fmt.Sprintf("%+.1f%%", r.memErr())}
}

func printText(out io.Writer, rows []row) {
	printMachines(out, rows)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(cells(r), "\t")+"\t")
	}
	_ = tw.Flush()
	printSummary(out, rows, "")
}

func printMarkdown(out io.Writer, rows []row) {
	printMachines(out, rows)
	fmt.Fprintln(out, "| "+strings.Join(header, " | ")+" |")
	fmt.Fprintln(out, "|---|"+strings.Repeat("---:|", len(header)-1))
	for _, r := range rows {
		fmt.Fprintln(out, "| "+strings.Join(cells(r), " | ")+" |")
	}
	printSummary(out, rows, "**")
}

// printMachines says what the measurements ran on, so a table is never read without it.
func printMachines(out io.Writer, rows []row) {
	var seen []string
	for _, r := range rows {
		s := fmt.Sprintf("%s (%s)", orUnknown(r.m.GPU), r.m.GPUType)
		if r.m.Torch != "" {
			s += ", torch " + r.m.Torch
		}
		if r.m.Driver != "" {
			s += ", driver " + r.m.Driver
		}
		if !slices.Contains(seen, s) {
			seen = append(seen, s)
		}
	}
	fmt.Fprintf(out, "measured on %s\n\n", strings.Join(seen, "; "))
}

func printSummary(out io.Writer, rows []row, bold string) {
	s := summarize(rows)
	fmt.Fprintf(out, "\n%smedian absolute error over %d configurations: time %.1f%%, peak memory %.1f%%%s (goal ≤ %.0f%%: time %s, memory %s)\n",
		bold, s.n, s.timeMedian, s.memMedian, bold, goalPercent, verdict(s.timeMedian), verdict(s.memMedian))
	var derived, uncalibrated bool
	for _, r := range rows {
		derived = derived || r.derived
		uncalibrated = uncalibrated || !r.calibrated
	}
	if derived {
		fmt.Fprintln(out, "\n† predicted with compute derived from the GPU's datasheet: the profiles do not measure this GPU type.")
	}
	if uncalibrated {
		fmt.Fprintln(out, "\n‡ the profile has no memory_model: peak memory uses the planner's defaults (24 bytes per parameter, 2.5 GB).")
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown GPU"
	}
	return s
}
