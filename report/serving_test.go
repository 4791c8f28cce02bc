package report

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/serving/router"
)

func TestPercentileNearestRank(t *testing.T) {
	xs := []float64{15, 20, 35, 40, 50}
	assert.Equal(t, 35.0, Percentile(xs, 50))
	assert.Equal(t, 50.0, Percentile(xs, 99))
	assert.Equal(t, 15.0, Percentile(xs, 1))
	assert.Equal(t, 50.0, Percentile(xs, 100))
	assert.Equal(t, 0.0, Percentile(nil, 50))
	assert.Equal(t, []float64{15, 20, 35, 40, 50}, xs, "the input is left as it was")
	var hundred []float64
	for i := 100; i >= 1; i-- {
		hundred = append(hundred, float64(i))
	}
	assert.Equal(t, 50.0, Percentile(hundred, 50))
	assert.Equal(t, 99.0, Percentile(hundred, 99))
}

// req is a request started at start (ms after t0) that streamed n chunks every `every` ms
// after a first token at first ms.
func req(t0 time.Time, i int, start, first, every, n int, text, ref string) ServeRequest {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	r := ServeRequest{Index: i, Start: at(start), FirstToken: at(start + first), Text: text, Reference: ref}
	for k := range n {
		r.Chunks = append(r.Chunks, at(start+first+k*every))
	}
	r.End = r.Chunks[len(r.Chunks)-1]
	return r
}

func sampleServeFacts() ServeFacts {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	reqs := []ServeRequest{
		req(t0, 0, 0, 100, 10, 11, "abc", "abc"),   // 0–200 ms
		req(t0, 1, 1000, 50, 10, 6, "def", "def"),  // 1000–1100 ms
		req(t0, 2, 2000, 20, 10, 3, "ghi", "gh!"),  // differs
		req(t0, 3, 3000, 200, 10, 2, "jkl", "jkl"), // 3000–3210 ms
	}
	// Request 1 is hit by the fault at 1050 ms: a 920 ms pause inside it.
	reqs[1].Chunks[3] = t0.Add(1990 * time.Millisecond)
	reqs[1].Chunks[4] = t0.Add(2000 * time.Millisecond)
	reqs[1].Chunks[5] = t0.Add(2010 * time.Millisecond)
	reqs[1].End = reqs[1].Chunks[5]
	failed := ServeRequest{Index: 4, Start: t0.Add(4 * time.Second), End: t0.Add(5 * time.Second), Error: "boom", Reference: "x"}
	reqs = append(reqs, failed)
	fo := serving.Failover{At: t0.Add(1100 * time.Millisecond), Stage: 1, From: "i-a", To: "i-b", Seconds: 0.8, DowntimeSeconds: 0.8,
		ReadyAt: t0.Add(1900 * time.Millisecond)}
	return ServeFacts{Deployment: "serve-tiny-x", Model: "tiny", Stages: 2, Rate: 2, Duration: 5 * time.Second, TimeScale: 20,
		Wall: 30 * time.Second, LoadStart: t0, Requests: reqs, PlannedFaults: 2, Slack: 50 * time.Millisecond,
		Faults: []ServeFault{{Stage: 1, Instance: "i-a", Injected: t0.Add(1050 * time.Millisecond), InFlight: 1, Failover: &fo},
			{Stage: 0, Instance: "i-c", Notice: true, Injected: t0.Add(2900 * time.Millisecond)}},
		Final:    serving.Status{Phase: serving.PhaseStopped, Failovers: 1, CostUSD: 0.25, OnDemandCostUSD: 1},
		Counters: router.Counters{Pauses: 1, Resumes: 1}}
}

func TestSummarizeServing(t *testing.T) {
	s := SummarizeServing(sampleServeFacts())
	assert.Equal(t, 5, s.Requests)
	assert.Equal(t, 4, s.Succeeded)
	assert.Equal(t, 1, s.Failed)
	assert.Equal(t, []int{4}, s.FailedIDs)
	assert.Equal(t, 3, s.Matched)
	assert.Equal(t, []int{2}, s.DifferingIDs)
	assert.Equal(t, 22, s.Tokens)
	// Latencies 200, 1010, 40, 210 ms; TTFT 100, 50, 20, 200 ms (nearest rank).
	assert.Equal(t, Percentiles{P50: 200, P99: 1010, Max: 1010}, s.Latency)
	assert.Equal(t, Percentiles{P50: 50, P99: 200, Max: 200}, s.TTFT)
	require.Len(t, s.Faults, 2)
	f := s.Faults[0]
	assert.True(t, f.Recorded)
	assert.Equal(t, 1.05, f.AtSeconds)
	assert.Equal(t, 0.85, f.InjectedToReadySeconds)
	assert.Equal(t, 0.8, f.FailoverSeconds)
	assert.Equal(t, 1, f.RequestsHit, "only request 1 overlaps 1050–1950 ms")
	assert.Equal(t, 920.0, f.MaxPauseMs, "1070 → 1990 ms")
	// The unrecorded fault's window runs to the end of the load: requests 3 and 4.
	assert.False(t, s.Faults[1].Recorded)
	assert.Equal(t, 2, s.Faults[1].RequestsHit)
	assert.Equal(t, 3, s.RequestsHit)
	// Gaps of unhit requests 0 and 2 only: all 10 ms.
	assert.Equal(t, Percentiles{P50: 10, P99: 10, Max: 10}, s.UnhitGap)
	assert.Equal(t, 75.0, s.SavingsPct)
	assert.False(t, s.OK)
	assert.Len(t, s.Problems, 3, "failed, differing, and the fault without a failover record: %v", s.Problems)
}

func TestSummarizeServingOK(t *testing.T) {
	f := sampleServeFacts()
	f.Requests = f.Requests[:2]
	f.Faults = f.Faults[:1]
	f.PlannedFaults = 1
	s := SummarizeServing(f)
	assert.True(t, s.OK, "%v", s.Problems)
	f.LeakedInstances = 1
	f.Final.Phase = serving.PhaseFailed
	s = SummarizeServing(f)
	assert.False(t, s.OK)
	assert.Len(t, s.Problems, 2)
	f.LeakedInstances, f.Final.Phase, f.PlannedFaults = 0, serving.PhaseStopped, 2
	assert.Equal(t, []string{"1 of 2 planned faults were injected"}, SummarizeServing(f).Problems)
}

func TestWriteServing(t *testing.T) {
	f := sampleServeFacts()
	s := SummarizeServing(f)
	dir := t.TempDir()
	files, err := WriteServing(dir, "demo-serve", s, f)
	require.NoError(t, err)
	md, err := os.ReadFile(files.Markdown)
	require.NoError(t, err)
	assert.Contains(t, string(md), "i-a → i-b")
	assert.Contains(t, string(md), "![timeline](demo-serve-timeline.svg)")
	assert.Contains(t, string(md), "**FAILED**")
	svg, err := os.ReadFile(filepath.Join(dir, "demo-serve-timeline.svg"))
	require.NoError(t, err)
	dec := xml.NewDecoder(bytes.NewReader(svg))
	for {
		if _, err := dec.Token(); err != nil {
			require.Equal(t, "EOF", err.Error(), "well-formed SVG")
			break
		}
	}
	assert.Contains(t, string(svg), "stroke-dasharray", "the notice fault is dashed")
}
