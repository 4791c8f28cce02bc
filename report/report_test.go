package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/training"
)

func sampleStatus() training.JobStatus {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	plan := func(zones ...string) planner.Plan {
		var p planner.Plan
		for _, z := range zones {
			p.Stages = append(p.Stages, planner.Stage{Replicas: []planner.Replica{{GPU: "V100-16", TP: 1, Zone: z}}})
		}
		return p
	}
	a, b := "aws/us-west-2a/V100-16(spot)", "aws/us-east-2b/V100-16(spot)"
	return training.JobStatus{
		JobID: "train-demo-abc123", Name: "demo <x>", Phase: training.PhaseCompleted,
		Iteration: 100, Iterations: 100, CostUSD: 3, OnDemandCostUSD: 10, Preemptions: 1, Notices: 1,
		Replans: 1, CheckpointsCommitted: 4, Restores: 1, LostIterations: 25, StartedAt: t0, UpdatedAt: at(30),
		Plans: []training.PlanRecord{
			{Epoch: 1, At: at(1), Reason: "initial", Summary: "2 stages", Plan: plan("us-west-2a", "us-west-2a"), Estimate: planner.Estimate{IterTime: 2}},
			{Epoch: 2, At: at(12), Reason: "preemption", Summary: "1 stage | east", Plan: plan("us-east-2b"), FromStep: 50, Estimate: planner.Estimate{IterTime: 4}},
		},
		Timeline: []training.TimelinePoint{
			{At: at(0), Event: "submitted"},
			{At: at(2), GPUs: map[string]int{a: 2}, Event: "acquired"},
			{At: at(8), Iteration: 75, CostUSD: 1, GPUs: map[string]int{a: 2}},
			{At: at(10), Iteration: 75, CostUSD: 1.2, GPUs: map[string]int{a: 1}, Event: "preempted i-1"},
			{At: at(12), Iteration: 50, CostUSD: 1.3, GPUs: map[string]int{b: 1}, Event: "replanned"},
			{At: at(14), Iteration: 60, CostUSD: 1.5, GPUs: map[string]int{b: 1}},
			{At: at(30), Iteration: 100, CostUSD: 3, Event: "released"},
		},
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize(sampleStatus(), Facts{Wall: 31500 * time.Millisecond, TimeScale: 60, StateVerified: true, InjectedPreemptions: 1})
	assert.Equal(t, "completed", s.Status)
	assert.Equal(t, 70.0, s.SavingsPct)
	assert.Equal(t, 0.8, s.Goodput, "100 useful of 125 computed")
	assert.Equal(t, 2, s.DistinctPlans)
	assert.Equal(t, 4.0, s.RecoverySeconds, "from the preemption at 10 s to progress past step 50 at 14 s")
	assert.Equal(t, 4.0*60+25*3, s.LostSimSeconds)
	assert.Equal(t, 31.5, s.WallSeconds)
	require.Len(t, s.Plans, 2)
	assert.Equal(t, 2, s.Plans[0].GPUs)
}

func TestTimelineIsWellFormedSVG(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteTimeline(&buf, sampleStatus()))
	out := buf.String()
	dec := xml.NewDecoder(strings.NewReader(out))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "the SVG must parse as XML")
	}
	assert.Contains(t, out, "aws/us-east-2b/V100-16(spot)")
	assert.Contains(t, out, "demo &lt;x&gt;", "text is escaped")
	assert.Contains(t, out, "preempted i-1")
	assert.Equal(t, 3, strings.Count(out, "stroke=\"#d62728\" stroke-width=\"1.5\"><title>"), "one preemption marker per panel")
}

func TestTimelineWithoutSamples(t *testing.T) {
	st := sampleStatus()
	st.Timeline = nil
	var buf bytes.Buffer
	require.NoError(t, WriteTimeline(&buf, st))
	assert.Contains(t, buf.String(), "</svg>")
}

func TestWriteFiles(t *testing.T) {
	st := sampleStatus()
	s := Summarize(st, Facts{Wall: time.Minute, TimeScale: 60})
	files, err := Write(t.TempDir(), "demo", s, st)
	require.NoError(t, err)
	md, err := os.ReadFile(files.Markdown)
	require.NoError(t, err)
	text := string(md)
	assert.Contains(t, text, "![timeline](demo-timeline.svg)")
	assert.Contains(t, text, "| 2 | 12.0 | preemption | 1 | 50 |")
	assert.Contains(t, text, "1 stage / east", "pipes in summaries do not break the table")
	assert.Contains(t, text, "state verified | no")
	_, err = os.Stat(files.Timeline)
	require.NoError(t, err)
}

func TestSummaryComparesWithTheBestOnDemandPlan(t *testing.T) {
	st := training.JobStatus{JobID: "j", Phase: training.PhaseCompleted, CostUSD: 30, OnDemandCostUSD: 100}
	s := Summarize(st, Facts{BestOnDemandUSD: 75, BestOnDemandPlan: "P=1 D=4"})
	assert.Equal(t, 75.0, s.BestOnDemandCostUSD)
	assert.Equal(t, 60.0, s.SavingsVsBestOnDemandPct)
	assert.Equal(t, 70.0, s.SavingsPct, "the same-plans comparison is kept beside it")
	none := Summarize(st, Facts{})
	assert.Zero(t, none.BestOnDemandCostUSD)
	assert.Zero(t, none.SavingsVsBestOnDemandPct)
}

func TestReportListsTheOnDemandPurchasesAndWhy(t *testing.T) {
	st := sampleStatus()
	st.OnDemandPurchases = []training.OnDemandPurchase{{At: st.StartedAt.Add(20 * time.Second), GPUs: 4,
		Zones: map[string]int{"us-west-2a": 4, "us-east-2b": 0}, Why: "spot short: 0 spot GPUs can be had | the deadline needs 4"}}
	s := Summarize(st, Facts{Wall: time.Minute, TimeScale: 60})
	require.Len(t, s.OnDemandPurchases, 1)
	var b bytes.Buffer
	require.NoError(t, WriteMarkdown(&b, s, st, ""))
	assert.Contains(t, b.String(), "## On-demand purchases")
	assert.Contains(t, b.String(), "| 20.0 | 4 | us-east-2b: 0, us-west-2a: 4 | spot short: 0 spot GPUs can be had / the deadline needs 4 |")

	st.OnDemandPurchases = nil
	b.Reset()
	require.NoError(t, WriteMarkdown(&b, Summarize(st, Facts{}), st, ""))
	assert.NotContains(t, b.String(), "On-demand purchases", "nothing bought, no section")
}

// The provider's bill stands beside the job's own accounting, so a difference shows.
func TestReportSetsTheJobsCostBesideTheProvidersBill(t *testing.T) {
	st := sampleStatus()
	st.CostUSD = 4.4
	s := Summarize(st, Facts{Wall: time.Minute, TimeScale: 60, BilledUSD: 4})
	assert.Equal(t, 4.0, s.BilledUSD)
	var b bytes.Buffer
	require.NoError(t, WriteMarkdown(&b, s, st, ""))
	assert.Contains(t, b.String(), "| billed by the provider | $4.00 (the job's own accounting above: +10.0%) |")

	b.Reset()
	require.NoError(t, WriteMarkdown(&b, Summarize(st, Facts{}), st, ""))
	assert.NotContains(t, b.String(), "billed by the provider", "no bill known, no row")
}

// The report states the GPU-hours the job's meter counted, from the running totals the
// status and its timeline carry, however thinned the timeline's samples are.
func TestTheReportStatesTheMetersGPUHours(t *testing.T) {
	st := sampleStatus()
	st.GPUHours = 12.5
	st.Timeline[len(st.Timeline)-1].GPUHours = 12.5
	st.Timeline[2].GPUHours = 4.25
	s := Summarize(st, Facts{Wall: time.Minute, TimeScale: 60})
	assert.Equal(t, 12.5, s.GPUHours)
	var md, svg bytes.Buffer
	require.NoError(t, WriteMarkdown(&md, s, st, ""))
	assert.Contains(t, md.String(), "| GPU-hours | 12.50 ($0.24 per GPU-hour) |")
	require.NoError(t, WriteTimeline(&svg, st))
	assert.Contains(t, svg.String(), ", 12.5 GPU-hours</text>")
	assert.Contains(t, svg.String(), "aws/us-west-2a/V100-16(spot): 2 (4.25 GPU-hours so far)")

	st.GPUHours = 0 // a status without the meter's total: the timeline's last point
	assert.Equal(t, 12.5, Summarize(st, Facts{}).GPUHours)
}
