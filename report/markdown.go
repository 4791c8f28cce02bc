package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/schooner-ml/schooner/training"
)

// WriteMarkdown writes the report a person reads after the job: the summary, the plan
// history and, when timelineFile is set, the timeline image beside it.
func WriteMarkdown(w io.Writer, s Summary, st training.JobStatus, timelineFile string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Training job %s\n\n", nonEmpty(st.Name, s.JobID))
	fmt.Fprintf(&b, "Job id `%s`: **%s** after %d of %d iterations in %.1f s of wall time", s.JobID, s.Status, s.Iterations, s.IterationsTotal, s.WallSeconds)
	if s.TimeScale > 0 && s.TimeScale != 1 {
		fmt.Fprintf(&b, " (simulated time runs %gx faster; costs are in simulated hours)", s.TimeScale)
	}
	b.WriteString(".\n\n")
	if s.Error != "" {
		fmt.Fprintf(&b, "Error: %s\n\n", s.Error)
	}
	b.WriteString("| | |\n|---|---|\n")
	row := func(k, format string, args ...any) { fmt.Fprintf(&b, "| %s | %s |\n", k, fmt.Sprintf(format, args...)) }
	if s.SavingsBaseline == BaselineBestOnDemand {
		row("cost", "$%.2f: %.1f%% saved against the job on its best on-demand plan", s.CostUSD, s.SavingsPct)
		row("the job on its best on-demand plan, start to end", "$%.2f: %s", s.BestOnDemandCostUSD, strings.ReplaceAll(s.BestOnDemandPlan, "|", "/"))
	} else {
		row("cost", "$%.2f (no best on-demand plan to compare with)", s.CostUSD)
	}
	if s.GPUHours > 0 {
		row("GPU-hours", "%.2f ($%.2f per GPU-hour)", s.GPUHours, s.CostUSD/s.GPUHours)
	}
	if s.BilledUSD > 0 {
		row("billed by the provider", "$%.2f (the job's own accounting above: %+.1f%%)", s.BilledUSD, s.AccountingOverBillPct())
	}
	row("the same machines at on-demand prices", "$%.2f (%.1f%% saved; counts the idle, recovery and redone time of the spot run, so it flatters spot)",
		s.HoldingOnDemandCostUSD, s.SavingsVsHoldingPct)
	row("preemptions survived", "%d (%d announced by a notice, %d injected by the demo)", s.Preemptions, s.Notices, s.InjectedPreemptions)
	row("replans", "%d (%d distinct plans)", s.Replans, s.DistinctPlans)
	row("checkpoints committed / restores", "%d / %d", s.CheckpointsCommitted, s.Restores)
	row("iterations redone after restores", "%d (goodput %.1f%%)", s.LostIterations, 100*s.Goodput)
	row("time lost to preemptions", "%.1f s wall to recover, %.0f s simulated including redone work", s.RecoverySeconds, s.LostSimSeconds)
	verified := "yes: the final checkpoint equals an uninterrupted run, bit for bit"
	if !s.StateVerified {
		verified = "no"
		if s.VerifyError != "" {
			verified += ": " + s.VerifyError
		}
	}
	row("state verified", "%s", verified)
	row("instances left running", "%d", s.LeakedInstances)
	if timelineFile != "" {
		fmt.Fprintf(&b, "\n![timeline](%s)\n", timelineFile)
	}
	b.WriteString("\n## Plan history\n\n| epoch | at (s) | reason | GPUs | from step | s/iter (sim) | USD/h | plan |\n|---|---|---|---|---|---|---|---|\n")
	for _, p := range s.Plans {
		at := 0.0
		if !st.StartedAt.IsZero() {
			at = p.At.Sub(st.StartedAt).Seconds()
		}
		fmt.Fprintf(&b, "| %d | %.1f | %s | %d | %d | %.3f | %.2f | %s |\n", p.Epoch, at, p.Reason, p.GPUs, p.FromStep, p.IterSeconds, p.USDPerHour, strings.ReplaceAll(p.Summary, "|", "/"))
	}
	if len(s.OnDemandPurchases) > 0 {
		b.WriteString("\n## On-demand purchases\n\nWhat the deadline policy bought on demand, what it cost and why.\n\n| at (s) | GPUs | where | USD/h | why |\n|---|---|---|---|---|\n")
		for _, p := range s.OnDemandPurchases {
			at := 0.0
			if !st.StartedAt.IsZero() {
				at = p.At.Sub(st.StartedAt).Seconds()
			}
			price := "not recorded"
			if p.USDPerHour > 0 {
				price = fmt.Sprintf("%.2f", p.USDPerHour)
			}
			fmt.Fprintf(&b, "| %.1f | %d | %s | %s | %s |\n", at, p.GPUs, p.ZoneList(), price, strings.ReplaceAll(p.Why, "|", "/"))
		}
	}
	if len(st.GPUs) > 0 {
		b.WriteString("\n## GPUs held at the end\n\n")
		keys := make([]string, 0, len(st.GPUs))
		for k := range st.GPUs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "- %s: %d\n", k, st.GPUs[k])
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Files are the paths Write wrote.
type Files struct {
	Markdown string
	Timeline string
}

// Write writes <prefix>-report.md and <prefix>-timeline.svg into dir, creating it.
func Write(dir, prefix string, s Summary, st training.JobStatus) (Files, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Files{}, fmt.Errorf("creating report directory %s: %w", dir, err)
	}
	f := Files{Markdown: filepath.Join(dir, prefix+"-report.md"), Timeline: filepath.Join(dir, prefix+"-timeline.svg")}
	if err := writeFile(f.Timeline, func(w io.Writer) error { return WriteTimeline(w, st) }); err != nil {
		return Files{}, err
	}
	if err := writeFile(f.Markdown, func(w io.Writer) error { return WriteMarkdown(w, s, st, filepath.Base(f.Timeline)) }); err != nil {
		return Files{}, err
	}
	return f, nil
}

func writeFile(path string, write func(io.Writer) error) error {
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	if err := write(out); err != nil {
		_ = out.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
