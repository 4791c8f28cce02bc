package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/schooner-ml/schooner/internal/defaults"
	"github.com/schooner-ml/schooner/training"
)

// Layout of the timeline, in SVG user units.
const (
	svgWidth    = 960
	plotLeft    = 70
	plotRight   = 720 // the legend sits right of it
	panelHeight = 150
	panelGap    = 40
	topMargin   = 40
)

var palette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// WriteTimeline draws the job's timeline as SVG: GPUs held by zone and type (stacked), cost
// so far and iteration, on one wall-time axis, with preemptions as red lines and replans as
// blue dashes across all three panels. The GPU-hours it states are the meter's running
// totals, not an integral of the samples.
func WriteTimeline(w io.Writer, st training.JobStatus) error {
	pts := st.Timeline
	if len(pts) == 0 {
		pts = []training.TimelinePoint{{At: st.StartedAt}, {At: st.UpdatedAt, Iteration: st.Iteration, CostUSD: st.CostUSD}}
	}
	start := pts[0].At
	if !st.StartedAt.IsZero() && st.StartedAt.Before(start) {
		start = st.StartedAt
	}
	end := pts[len(pts)-1].At
	span := end.Sub(start).Seconds()
	defaults.Positive(&span, 1)
	x := func(t time.Time) float64 { return plotLeft + (plotRight-plotLeft)*t.Sub(start).Seconds()/span }
	keys := gpuKeys(pts)
	maxGPUs, maxCost, maxIter := 1.0, 0.01, float64(st.Iterations)
	for _, p := range pts {
		maxGPUs = math.Max(maxGPUs, float64(sum(p.GPUs)))
		maxCost = math.Max(maxCost, p.CostUSD)
		maxIter = math.Max(maxIter, float64(p.Iteration))
	}
	defaults.Positive(&maxIter, 1)
	height := topMargin + 3*panelHeight + 3*panelGap
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", svgWidth, height, svgWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	title := fmt.Sprintf("%s — %s, %d/%d iterations, $%.2f (%s)", nonEmpty(st.Name, st.JobID), st.Phase, st.Iteration, st.Iterations, st.CostUSD, baselineText(st))
	if h := gpuHours(st); h > 0 {
		title += fmt.Sprintf(", %s GPU-hours", trimFloat(h))
	}
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", plotLeft, esc(title))
	panels := []struct {
		title string
		max   float64
		unit  string
	}{{"GPUs held by zone and type", maxGPUs, ""}, {"cost so far (USD)", maxCost, "$"}, {"iteration", maxIter, ""}}
	for i, pn := range panels {
		top := float64(topMargin + i*(panelHeight+panelGap) + 16)
		drawAxes(&b, pn.title, pn.unit, top, pn.max, span)
		y := func(v float64) float64 { return top + panelHeight - panelHeight*v/pn.max }
		switch i {
		case 0:
			drawStacked(&b, pts, keys, x, y, end)
		case 1:
			drawStep(&b, pts, x, y, end, func(p training.TimelinePoint) float64 { return p.CostUSD }, "#e15759")
		case 2:
			drawStep(&b, pts, x, y, end, func(p training.TimelinePoint) float64 { return float64(p.Iteration) }, "#59a14f")
		}
		drawEvents(&b, pts, st.Plans, x, top)
	}
	drawLegend(&b, keys)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func drawAxes(b *strings.Builder, title, unit string, top, max, span float64) {
	bottom := top + panelHeight
	fmt.Fprintf(b, `<text x="%d" y="%.1f" font-weight="bold">%s</text>`+"\n", plotLeft, top-6, esc(title))
	fmt.Fprintf(b, `<rect x="%d" y="%.1f" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", plotLeft, top, plotRight-plotLeft, panelHeight)
	for _, f := range []float64{0, 0.5, 1} {
		yy := bottom - panelHeight*f
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s%s</text>`+"\n", plotLeft-4, yy+4, unit, trimFloat(max*f))
	}
	for i := 0; i <= 4; i++ {
		xx := plotLeft + float64(plotRight-plotLeft)*float64(i)/4
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%ss</text>`+"\n", xx, bottom+13, trimFloat(span*float64(i)/4))
	}
}

// drawStacked draws the GPUs of every key stacked, as steps: a holding lasts until the next
// sample. Each step tells the running GPU-hours of its sample (exact however thinned the
// timeline is; the steps' areas are exact only where no change of holding was dropped).
func drawStacked(b *strings.Builder, pts []training.TimelinePoint, keys []string, x func(time.Time) float64, y func(float64) float64, end time.Time) {
	for i := range pts {
		next := end
		if i+1 < len(pts) {
			next = pts[i+1].At
		}
		base := 0.0
		for k, key := range keys {
			n := float64(pts[i].GPUs[key])
			if n == 0 {
				continue
			}
			x0, x1 := x(pts[i].At), x(next)
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %d (%s GPU-hours so far)</title></rect>`+"\n",
				x0, y(base+n), math.Max(x1-x0, 0.5), y(base)-y(base+n), palette[k%len(palette)], esc(key), int(n), trimFloat(pts[i].GPUHours))
			base += n
		}
	}
}

func drawStep(b *strings.Builder, pts []training.TimelinePoint, x func(time.Time) float64, y func(float64) float64, end time.Time, val func(training.TimelinePoint) float64, color string) {
	var path strings.Builder
	for i, p := range pts {
		if i == 0 {
			fmt.Fprintf(&path, "M%.1f,%.1f", x(p.At), y(val(p)))
		} else {
			fmt.Fprintf(&path, " L%.1f,%.1f L%.1f,%.1f", x(p.At), y(val(pts[i-1])), x(p.At), y(val(p)))
		}
	}
	fmt.Fprintf(&path, " L%.1f,%.1f", x(end), y(val(pts[len(pts)-1])))
	fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", path.String(), color)
}

// drawEvents marks preemptions (red) and plan changes (blue, dashed) in one panel.
func drawEvents(b *strings.Builder, pts []training.TimelinePoint, plans []training.PlanRecord, x func(time.Time) float64, top float64) {
	for _, p := range pts {
		if strings.Contains(strings.ToLower(p.Event), "preempt") {
			fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#d62728" stroke-width="1.5"><title>%s</title></line>`+"\n",
				x(p.At), x(p.At), top, top+panelHeight, esc(p.Event))
		}
	}
	for _, p := range plans {
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#1f77b4" stroke-dasharray="4,3"><title>%s</title></line>`+"\n",
			x(p.At), x(p.At), top, top+panelHeight, esc(fmt.Sprintf("epoch %d (%s): %s", p.Epoch, p.Reason, p.Summary)))
	}
}

func drawLegend(b *strings.Builder, keys []string) {
	y := topMargin + 16
	for i, k := range keys {
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			plotRight+15, y+i*16, palette[i%len(palette)], plotRight+30, y+i*16+9, esc(k))
	}
	y += len(keys)*16 + 10
	fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#d62728" stroke-width="1.5"/><text x="%d" y="%d">preemption</text>`+"\n", plotRight+15, plotRight+25, y+5, y+5, plotRight+30, y+9)
	y += 16
	fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#1f77b4" stroke-dasharray="4,3"/><text x="%d" y="%d">new plan</text>`+"\n", plotRight+15, plotRight+25, y+5, y+5, plotRight+30, y+9)
}

// gpuKeys lists every "provider/zone/gpu(capacity)" key of the timeline, sorted.
func gpuKeys(pts []training.TimelinePoint) []string {
	seen := map[string]bool{}
	var keys []string
	for _, p := range pts {
		for k := range p.GPUs {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func esc(s string) string { return html.EscapeString(s) }

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "" || s == "-0" {
		return "0"
	}
	return s
}

func nonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// baselineText is the on-demand figure the timeline's title compares the cost with: the job
// on its best on-demand plan when known, else the same machines on demand.
func baselineText(st training.JobStatus) string {
	if st.BestOnDemandCostUSD > 0 {
		return fmt.Sprintf("best on-demand plan $%.2f", st.BestOnDemandCostUSD)
	}
	return fmt.Sprintf("same machines on demand $%.2f", st.HoldingOnDemandCostUSD)
}
