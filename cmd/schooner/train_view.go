package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"golang.org/x/term"

	"github.com/schooner-ml/schooner/training"
)

// isTerminal says whether the live view can redraw in place; otherwise it prints one line
// per change, which logs and pipes read well.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressBar draws done/total as a bar of width cells.
func progressBar(done, total int64, width int) string {
	if total <= 0 {
		return strings.Repeat("░", width)
	}
	n := int(int64(width) * min(done, total) / total)
	return strings.Repeat("█", n) + strings.Repeat("░", width-n)
}

// gpuGroups folds "provider/zone/gpu(capacity)" keys into sorted "zone gpu capacity: n"
// lines.
func gpuGroups(gpus map[string]int) []string {
	keys := make([]string, 0, len(gpus))
	for k, n := range gpus {
		if n > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = fmt.Sprintf("%-40s %3d", strings.ReplaceAll(k, "/", " "), gpus[k])
	}
	return lines
}

func totalGPUs(gpus map[string]int) int {
	n := 0
	for _, v := range gpus {
		n += v
	}
	return n
}

// usd formats money so that a small amount never reads as nothing: cents from a dollar up,
// four significant digits below.
func usd(v float64) string {
	if v != 0 && v > -1 && v < 1 {
		return fmt.Sprintf("$%.4g", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

func checkpointText(step int64) string {
	if step < 0 {
		return "none yet"
	}
	return fmt.Sprintf("step %d", step)
}

// renderView is the TTY view of a job, one string per line.
func renderView(st training.JobStatus) []string {
	pct := 0.0
	if st.Iterations > 0 {
		pct = 100 * float64(st.Iteration) / float64(st.Iterations)
	}
	lines := []string{
		fmt.Sprintf("job %s   phase %s   epoch %d", st.JobID, strings.ToUpper(st.Phase), st.Epoch),
		fmt.Sprintf("iteration %d/%d  %s %5.1f%%", st.Iteration, st.Iterations, progressBar(st.Iteration, st.Iterations, 32), pct),
		costLine(st),
		fmt.Sprintf("the same machines at on-demand prices: %s (idle, recovery and redone time included)", usd(st.HoldingOnDemandCostUSD)),
		fmt.Sprintf("preemptions survived %d (notices %d)   machines lost otherwise %d   replans %d   restores %d   redone iterations %d",
			st.Preemptions, st.Notices, st.LostInstances, st.Replans, st.Restores, st.LostIterations),
		fmt.Sprintf("last checkpoint %s   checkpoints committed %d", checkpointText(st.LastCheckpoint), st.CheckpointsCommitted),
		fmt.Sprintf("GPUs %d:", totalGPUs(st.GPUs)),
	}
	for _, g := range gpuGroups(st.GPUs) {
		lines = append(lines, "  "+g)
	}
	if n := len(st.Plans); n > 0 {
		p := st.Plans[n-1]
		lines = append(lines, fmt.Sprintf("plan (epoch %d, %s): %s", p.Epoch, p.Reason, p.Summary))
	}
	if n := len(st.OnDemandPurchases); n > 0 {
		lines = append(lines, fmt.Sprintf("on-demand purchases %d, the last:", n))
		for _, p := range st.OnDemandPurchases[max(0, n-maxPurchasesShown):] {
			lines = append(lines, "  "+purchaseText(p))
		}
	}
	if st.Paused {
		lines = append(lines, "PAUSED (schooner: temporal workflow update execute --name resume)")
	}
	if st.CheckpointStore != "" {
		lines = append(lines, "checkpoints in "+st.CheckpointStore)
	}
	if st.Error != "" {
		lines = append(lines, "error: "+st.Error)
	}
	if st.Stale {
		lines = append(lines, fmt.Sprintf("STALE: the job did not answer; this is what it last published, at %s", st.UpdatedAt.Format("15:04:05")))
	}
	return lines
}

// plainLine is the one-line form of a job's status for logs and pipes.
func plainLine(st training.JobStatus) string {
	line := fmt.Sprintf("%s phase=%s iter=%d/%d gpus=%d zones=%s cost=%s usd/h=%.2f preemptions=%d replans=%d checkpoint=%s",
		st.JobID, st.Phase, st.Iteration, st.Iterations, totalGPUs(st.GPUs), strings.Join(st.Zones, ","), usd(st.CostUSD), st.USDPerHour,
		st.Preemptions, st.Replans, checkpointText(st.LastCheckpoint))
	if st.Stale {
		line += " stale=true"
	}
	return line
}

// liveView redraws the view in place on a terminal, or prints a line when the status
// changed otherwise.
type liveView struct {
	out   io.Writer
	tty   bool
	drawn int
	last  string
}

func (v *liveView) show(st training.JobStatus) {
	if !v.tty {
		line := plainLine(st)
		if line != v.last {
			fmt.Fprintln(v.out, line)
			v.last = line
		}
		return
	}
	var b strings.Builder
	if v.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", v.drawn) // back to the top of the previous frame
	}
	lines := renderView(st)
	for _, l := range lines {
		b.WriteString("\x1b[2K" + l + "\n")
	}
	for i := len(lines); i < v.drawn; i++ { // clear what a longer frame left behind
		b.WriteString("\x1b[2K\n")
	}
	if v.drawn > len(lines) {
		fmt.Fprintf(&b, "\x1b[%dA", v.drawn-len(lines))
	}
	v.drawn = len(lines)
	fmt.Fprint(v.out, b.String())
}

// costLine is the cost against the job's baseline, the whole job on its best on-demand plan:
// the saving once the job completed, the two figures side by side before (the cost so far is
// not the job's yet).
func costLine(st training.JobStatus) string {
	pct, ok := st.SavingsPct()
	switch {
	case ok && st.Phase == training.PhaseCompleted:
		return fmt.Sprintf("cost %s: %.1f%% saved against the job on its best on-demand plan (%s: %s)", usd(st.CostUSD), pct,
			usd(st.BestOnDemandCostUSD), st.BestOnDemandPlan)
	case ok:
		return fmt.Sprintf("cost %s so far, %s/h now; the whole job on its best on-demand plan: %s (%s)", usd(st.CostUSD), usd(st.USDPerHour),
			usd(st.BestOnDemandCostUSD), st.BestOnDemandPlan)
	}
	return fmt.Sprintf("cost %s so far, %s/h now (no best on-demand plan to compare with)", usd(st.CostUSD), usd(st.USDPerHour))
}

// maxPurchasesShown bounds the on-demand purchases the view lists (the JSON has them all).
const maxPurchasesShown = 3

// purchaseText is one on-demand purchase: how many GPUs more, where, what they cost, why.
func purchaseText(p training.OnDemandPurchase) string {
	price := "price not recorded"
	if p.USDPerHour > 0 {
		price = usd(p.USDPerHour) + "/h"
	}
	return fmt.Sprintf("%s +%d GPUs (%s), %s: %s", p.At.Format("15:04:05"), p.GPUs, p.ZoneList(), price, p.Why)
}
