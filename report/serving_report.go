package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schooner-ml/schooner/internal/defaults"
)

// WriteServingMarkdown writes the report of `schooner demo serve`: the verdict, latency and
// time to first token, every fault with its failover and the pause clients saw, cost against
// on-demand, and the timeline image when timelineFile is set.
func WriteServingMarkdown(w io.Writer, s ServeSummary, timelineFile string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Serving deployment %s\n\n", s.Deployment)
	verdict := "**every response equals its failure-free reference**"
	if !s.OK {
		verdict = "**FAILED**: " + strings.Join(s.Problems, "; ")
	}
	fmt.Fprintf(&b, "Model `%s` in %d pipeline stages on the simulated spot market (%gx time). A Poisson load of %g requests/s for %.0f s (%d streaming completions) with %d injected faults: %s.\n\n",
		s.Model, s.Stages, s.TimeScale, s.Rate, s.DurationS, s.Requests, len(s.Faults), verdict)
	b.WriteString("| | |\n|---|---|\n")
	row := func(k, format string, args ...any) { fmt.Fprintf(&b, "| %s | %s |\n", k, fmt.Sprintf(format, args...)) }
	row("requests", "%d: %d succeeded, %d failed; %d equal their reference, %d differ", s.Requests, s.Succeeded, s.Failed, s.Matched, s.Differing)
	row("tokens streamed", "%d", s.Tokens)
	row("end-to-end latency", "p50 %.0f ms, p99 %.0f ms, max %.0f ms", s.Latency.P50, s.Latency.P99, s.Latency.Max)
	row("time to first token", "p50 %.0f ms, p99 %.0f ms, max %.0f ms", s.TTFT.P50, s.TTFT.P99, s.TTFT.Max)
	row("inter-token gap, requests no fault hit", "p50 %.1f ms, p99 %.1f ms, max %.0f ms", s.UnhitGap.P50, s.UnhitGap.P99, s.UnhitGap.Max)
	row("requests that hit a fault", "%d", s.RequestsHit)
	row("router", "%d pauses, %d resumes, %d re-prefills, %d gap tokens", s.Pauses, s.Resumes, s.Reprefills, s.GapTokens)
	row("deployment", "%d failovers, %d preemptions, %d notices, %d stages back on spot after an on-demand fallback; ended %s",
		s.Failovers, s.Preemptions, s.Notices, s.SpotReturns, s.FinalPhase)
	row("cost (simulated hours)", "$%.4f (policy %s) vs $%.4f for the same machines on demand (%.1f%% saved)",
		s.CostUSD, s.PolicyName(), s.OnDemandCostUSD, s.SavingsPct)
	row("instances left running", "%d", s.LeakedInstances)
	if timelineFile != "" {
		fmt.Fprintf(&b, "\n![timeline](%s)\n", timelineFile)
	}
	b.WriteString("\n## Faults\n\n")
	b.WriteString("| # | at (s) | stage | kind | machine | mid-generation | failover (loss/notice → ready) | stage down | injected → ready | requests hit | longest pause |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, f := range s.Faults {
		fo, down, inj := "not recorded", "", ""
		if f.Recorded {
			fo = fmt.Sprintf("%.2f s", f.FailoverSeconds)
			down = fmt.Sprintf("%.2f s", f.DowntimeSeconds)
			inj = fmt.Sprintf("%.2f s", f.InjectedToReadySeconds)
		}
		fmt.Fprintf(&b, "| %d | %.1f | %d | preempted %s | %s → %s | %d requests | %s | %s | %s | %d | %.0f ms |\n",
			i+1, f.AtSeconds, f.Stage, NoticeWord(f.Notice), f.From, nonEmpty(f.To, "?"), f.InFlight, fo, down, inj, f.RequestsHit, f.MaxPauseMs)
	}
	b.WriteString("\nA fault's window runs from its injection to the replacement's stage-ready plus " + FaultSlack.String() +
		"; a request hit it when its lifetime overlaps the window, and the longest pause is the longest wait between two chunks (or for the first) of any request that overlaps it. " +
		"With a notice the deployment buys the replacement at once and switches to it when it is ready: the stage is down only when the replacement's boot and start take longer than the notice. " +
		"Preemptions the market's traces made are counted in the deployment row, not here.\n")
	if len(s.DifferingIDs) > 0 || len(s.FailedIDs) > 0 {
		fmt.Fprintf(&b, "\n## Problems\n\n- differing: %v\n- failed: %v\n", s.DifferingIDs, s.FailedIDs)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteServingTimeline draws the load as SVG: one bar per request over wall time (waiting
// for its first token light, streaming dark, red when a fault hit it, black when it failed
// or differs), requests in flight below, each fault as a red line (dashed with a notice) and
// its failover window shaded up to the replacement's stage-ready.
func WriteServingTimeline(w io.Writer, s ServeSummary, f ServeFacts) error {
	start, end := f.LoadStart, loadEnd(f)
	for _, r := range f.Requests {
		if !r.Start.IsZero() && r.Start.Before(start) {
			start = r.Start
		}
	}
	for _, ft := range f.Faults {
		if fo := ft.Failover; fo != nil && fo.ReadyAt.After(end) {
			end = fo.ReadyAt
		}
	}
	span := end.Sub(start).Seconds()
	defaults.Positive(&span, 1)
	x := func(t time.Time) float64 { return plotLeft + (plotRight-plotLeft)*t.Sub(start).Seconds()/span }
	n := max(len(f.Requests), 1)
	reqTop, reqHeight := float64(topMargin+16), 300.0
	flightTop := reqTop + reqHeight + panelGap
	height := int(flightTop) + panelHeight + panelGap
	rowH := reqHeight / float64(n)
	hit := hitSet(f)

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", svgWidth, height, svgWidth, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	verdict := "all responses equal the reference"
	if !s.OK {
		verdict = "FAILED"
	}
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", plotLeft,
		esc(fmt.Sprintf("%s — %d requests at %g/s, %d faults, p99 %.0f ms: %s", s.Deployment, s.Requests, s.Rate, len(s.Faults), s.Latency.P99, verdict)))
	drawServeAxes(&b, "requests (one bar each, by send time)", reqTop, reqHeight, float64(n), span)
	for i, r := range f.Requests {
		if r.Start.IsZero() {
			continue
		}
		y := reqTop + reqHeight - float64(i+1)*rowH
		h := max(rowH*0.8, 0.5)
		dark, light := "#4e79a7", "#a0cbe8"
		switch {
		case !r.Matches():
			dark, light = "#000000", "#555555"
		case hit[i]:
			dark, light = "#e15759", "#ff9d9a"
		}
		first := r.FirstToken
		if first.IsZero() {
			first = r.End
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.2f" width="%.2f" height="%.2f" fill="%s"/>`, x(r.Start), y, max(x(first)-x(r.Start), 0.3), h, light)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.2f" width="%.2f" height="%.2f" fill="%s"/>`+"\n", x(first), y, max(x(r.End)-x(first), 0.3), h, dark)
	}
	// Requests in flight, sampled at 200 steps.
	counts := make([]int, 201)
	maxC := 1
	for k := range counts {
		t := start.Add(time.Duration(float64(k) / 200 * span * float64(time.Second)))
		for _, r := range f.Requests {
			if !r.Start.IsZero() && !t.Before(r.Start) && t.Before(r.End) {
				counts[k]++
			}
		}
		maxC = max(maxC, counts[k])
	}
	drawServeAxes(&b, "requests in flight", flightTop, panelHeight, float64(maxC), span)
	var pts []string
	for k, c := range counts {
		px := plotLeft + (plotRight-plotLeft)*float64(k)/200
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, flightTop+panelHeight-panelHeight*float64(c)/float64(maxC)))
	}
	fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#59a14f" stroke-width="1.5"/>`+"\n", strings.Join(pts, " "))
	// Faults across both panels.
	bottom := flightTop + panelHeight
	for i, ft := range f.Faults {
		x0 := x(ft.Injected)
		if fo := ft.Failover; fo != nil && !fo.ReadyAt.IsZero() {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#e15759" fill-opacity="0.12"/>`+"\n", x0, reqTop, max(x(fo.ReadyAt)-x0, 1), bottom-reqTop)
		}
		dash := ""
		if ft.Notice {
			dash = ` stroke-dasharray="6,3"`
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e15759" stroke-width="1.5"%s/>`+"\n", x0, reqTop-4, x0, bottom, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#e15759">%s</text>`+"\n", x0+3, reqTop-6, esc(fmt.Sprintf("%d: stage %d %s", i+1, ft.Stage, NoticeWord(ft.Notice))))
	}
	legend := []struct{ color, label string }{{"#a0cbe8", "waiting for first token"}, {"#4e79a7", "streaming"}, {"#e15759", "hit by a fault"},
		{"#000000", "failed or differs"}, {"#59a14f", "in flight"}}
	for i, l := range legend {
		y := topMargin + 20 + i*18
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", plotRight+20, y, l.color, plotRight+38, y+10, esc(l.label))
	}
	y := topMargin + 20 + len(legend)*18 + 10
	fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", plotRight+20, y, esc("red line: preempted without notice"))
	fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", plotRight+20, y+16, esc("dashed: notice given"))
	fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", plotRight+20, y+32, esc("shaded: until replacement ready"))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// hitSet marks the requests whose lifetime overlaps any fault's window.
func hitSet(f ServeFacts) []bool {
	slack := f.Slack
	defaults.Positive(&slack, FaultSlack)
	end := loadEnd(f)
	hit := make([]bool, len(f.Requests))
	for _, ft := range f.Faults {
		w0, w1 := ft.Window(slack, end)
		for i, r := range f.Requests {
			if !r.Start.IsZero() && overlaps(r.Start, r.End, w0, w1) {
				hit[i] = true
			}
		}
	}
	return hit
}

// WriteServing writes <prefix>-report.md and <prefix>-timeline.svg into dir, creating it.
func WriteServing(dir, prefix string, s ServeSummary, f ServeFacts) (Files, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Files{}, fmt.Errorf("creating report directory %s: %w", dir, err)
	}
	out := Files{Markdown: filepath.Join(dir, prefix+"-report.md"), Timeline: filepath.Join(dir, prefix+"-timeline.svg")}
	if err := writeFile(out.Timeline, func(w io.Writer) error { return WriteServingTimeline(w, s, f) }); err != nil {
		return Files{}, err
	}
	if err := writeFile(out.Markdown, func(w io.Writer) error { return WriteServingMarkdown(w, s, filepath.Base(out.Timeline)) }); err != nil {
		return Files{}, err
	}
	return out, nil
}

// drawServeAxes is drawAxes with a panel of any height.
func drawServeAxes(b *strings.Builder, title string, top, height, maxv, span float64) {
	bottom := top + height
	fmt.Fprintf(b, `<text x="%d" y="%.1f" font-weight="bold">%s</text>`+"\n", plotLeft, top-6, esc(title))
	fmt.Fprintf(b, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="none" stroke="#999"/>`+"\n", plotLeft, top, plotRight-plotLeft, height)
	for _, f := range []float64{0, 0.5, 1} {
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", plotLeft-4, bottom-height*f+4, trimFloat(maxv*f))
	}
	for i := 0; i <= 4; i++ {
		xx := plotLeft + float64(plotRight-plotLeft)*float64(i)/4
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%ss</text>`+"\n", xx, bottom+13, trimFloat(span*float64(i)/4))
	}
}
