package main

import (
	"errors"
	"fmt"
	"sort"

	"github.com/schooner-ml/schooner/interference"
)

// The runtime's two programs start apart (the HP one sleeps BE_WARMUP seconds, then loads its
// model), so the BE program runs alone for most of its life and its whole-run rate says little
// about what it kept while the HP requests ran. With --timeline the HP child prints its
// measured requests' wall-clock window and the BE child marks of its work done over time; the
// BE share is then read over the HP window only, the same window the mechanisms of the study
// are measured over.

// hpLine is the HP child's result line: its latencies and, with --timeline, the wall-clock
// window of its measured requests.
type hpLine struct {
	interference.Latency
	Window []float64 `json:"window_unix"`
}

// busyShare is the part of the HP window during which one of its requests was in flight
// (closed loop: one request at a time, so their latencies add up without overlap). A BE side
// that runs only while no HP request is in flight keeps at most 1 − busyShare of its rate over
// the window; anything above that bound it can only have done beside HP work. 0 when the line
// has no window.
func (h hpLine) busyShare() float64 {
	if len(h.Window) != 2 || h.Window[1] <= h.Window[0] || h.Requests <= 0 {
		return 0
	}
	return min(1, float64(h.Requests)*h.MeanMs/1e3/(h.Window[1]-h.Window[0]))
}

// beTimeline is the part of the BE child's line that --timeline adds: [unix seconds, work done
// so far in the workload's unit].
type beTimeline struct {
	Marks [][2]float64 `json:"marks"`
}

var errNoTimeline = errors.New("no timeline")

// rateOver is the BE work per second over [from, to], reading the work done at either end off
// the marks (linear between two marks). The marks must cover the window: a rate read past the
// last mark would be invented.
func rateOver(marks [][2]float64, from, to float64) (float64, error) {
	if len(marks) < 2 || to <= from {
		return 0, errNoTimeline
	}
	if from < marks[0][0] || to > marks[len(marks)-1][0] {
		return 0, fmt.Errorf("the BE marks (%.3f to %.3f) do not cover the HP window (%.3f to %.3f)",
			marks[0][0], marks[len(marks)-1][0], from, to)
	}
	return (workAt(marks, to) - workAt(marks, from)) / (to - from), nil
}

// workAt is the work done at t, linear between the marks either side of it; t within the marks.
func workAt(marks [][2]float64, t float64) float64 {
	i := sort.Search(len(marks), func(i int) bool { return marks[i][0] >= t })
	if i == 0 {
		return marks[0][1]
	}
	a, b := marks[i-1], marks[i]
	if b[0] == a[0] {
		return b[1]
	}
	return a[1] + (b[1]-a[1])*(t-a[0])/(b[0]-a[0])
}

// windowRate is the BE rate over the HP line's window from the BE child's file, or
// errNoTimeline when either was written without --timeline.
func windowRate(hp hpLine, bePath string) (float64, error) {
	var be beTimeline
	if err := lastJSON(bePath, &be); err != nil {
		return 0, err
	}
	if len(hp.Window) != 2 || len(be.Marks) == 0 {
		return 0, errNoTimeline
	}
	return rateOver(be.Marks, hp.Window[0], hp.Window[1])
}
