package interference

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"github.com/schooner-ml/schooner/interference"
)

// Layout of the Pareto plot, in SVG user units: one panel per pair, three to a row.
const (
	panelW, panelH = 320, 240
	marginL        = 52
	marginT        = 34
	marginB        = 36
	perRow         = 3
)

// WriteSVG draws, for each pair, every mechanism as a point (x: best-effort throughput against
// alone, y: latency-critical p99 against alone, on a log scale) and joins the Pareto front.
// What a user wants is low and to the right.
func WriteSVG(w io.Writer, s interference.Study, rows []Row) error {
	var pairs []interference.Pair
	seen := map[interference.Pair]bool{}
	maxY := 2.0
	for _, r := range rows {
		if !seen[r.Pair] {
			seen[r.Pair] = true
			pairs = append(pairs, r.Pair)
		}
		maxY = math.Max(maxY, r.LCP99x)
	}
	top := math.Pow(10, math.Ceil(math.Log10(maxY)*2)/2) // a round top: 10^(k/2)
	cols := min(perRow, max(1, len(pairs)))
	nrows := (len(pairs) + perRow - 1) / perRow
	width, height := cols*panelW+20, 50+max(1, nrows)*panelH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="10">`+"\n", width, height, width, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	title := fmt.Sprintf("Interference on %s: latency-critical p99 slowdown against best-effort throughput", s.GPU.Model)
	if s.Partial() {
		title = fmt.Sprintf("PARTIAL (%d of %d steps) — %s", s.StepsDone(), s.StepsDone()+len(s.Missing), title)
	}
	if s.Simulated {
		title = "SIMULATED (a model, not a GPU) — " + title
	}
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="13" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	for i, p := range pairs {
		drawPanel(&b, 10+(i%perRow)*panelW, 40+(i/perRow)*panelH, p, rows, top)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func drawPanel(b *strings.Builder, ox, oy int, p interference.Pair, rows []Row, top float64) {
	pw, ph := float64(panelW-marginL-16), float64(panelH-marginT-marginB)
	x := func(f float64) float64 { return float64(ox+marginL) + pw*math.Min(f, 1.2)/1.2 }
	y := func(v float64) float64 {
		return float64(oy+marginT) + ph*(1-math.Log10(math.Max(v, 1))/math.Log10(top))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="11" font-weight="bold">%s</text>`+"\n", ox+marginL, oy+18, html.EscapeString(p.String()))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", ox+marginL, oy+marginT, pw, ph)
	for _, f := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%.0f%%</text>`+"\n", x(f), oy+marginT+int(ph)+13, 100*f)
	}
	for v := 1.0; v <= top*1.001; v *= math.Sqrt(10) {
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%s×</text>`+"\n", ox+marginL-4, y(v)+3, trim(v))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#333">best-effort throughput vs alone</text>`+"\n", x(0.6), oy+panelH-6)
	var front []string
	for _, r := range Front(rows, p) {
		front = append(front, fmt.Sprintf("%.1f,%.1f", x(r.BEFraction), y(r.LCP99x)))
	}
	if len(front) > 1 {
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="#e15759" stroke-width="1.5"/>`+"\n", strings.Join(front, " "))
	}
	for _, r := range rows {
		if r.Pair != p {
			continue
		}
		color := "#4e79a7"
		if r.OnFront {
			color = "#e15759"
		}
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s: p99 %.2f× (%.2f ms), BE %.0f%%</title></circle>`+"\n",
			x(r.BEFraction), y(r.LCP99x), color, html.EscapeString(r.Mechanism.String()), r.LCP99x, r.LCP99Ms, 100*r.BEFraction)
		// Labels of points on the right half go to their left, so they stay inside the panel.
		lx, anchor := x(r.BEFraction)+5, "start"
		if r.BEFraction > 0.6 {
			lx, anchor = x(r.BEFraction)-5, "end"
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s" fill="#333">%s</text>`+"\n", lx, y(r.LCP99x)-4, anchor, html.EscapeString(r.Mechanism.String()))
	}
}

func trim(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
