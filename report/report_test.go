package report

import (
	"bytes"
	"encoding/json"
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
		Iteration: 100, Iterations: 100, CostUSD: 3, HoldingOnDemandCostUSD: 10, Preemptions: 1, Notices: 1,
		BestOnDemandCostUSD: 6, BestOnDemandPlan: "P=1 D=2 | V100, 1.000 s/iter, $6.12/h",
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
	assert.Equal(t, 50.0, s.SavingsPct, "against the job on its best on-demand plan")
	assert.Equal(t, BaselineBestOnDemand, s.SavingsBaseline)
	assert.Equal(t, 70.0, s.SavingsVsHoldingPct, "against the same machines on demand")
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
	st := training.JobStatus{JobID: "j", Phase: training.PhaseCompleted, CostUSD: 30, HoldingOnDemandCostUSD: 100,
		BestOnDemandCostUSD: 75, BestOnDemandPlan: "P=1 D=4"}
	s := Summarize(st, Facts{})
	assert.Equal(t, 75.0, s.BestOnDemandCostUSD)
	assert.Equal(t, "P=1 D=4", s.BestOnDemandPlan)
	assert.Equal(t, 60.0, s.SavingsPct, "the headline is against the job on its best on-demand plan")
	assert.Equal(t, BaselineBestOnDemand, s.SavingsBaseline)
	assert.Equal(t, 60.0, s.SavingsVsBestOnDemandPct)
	assert.Equal(t, 100.0, s.HoldingOnDemandCostUSD)
	assert.Equal(t, 70.0, s.SavingsVsHoldingPct, "the same machines on demand are kept beside it")
	assert.Equal(t, 100.0, s.OnDemandCostUSD, "on_demand_cost_usd keeps its meaning")

	st.BestOnDemandCostUSD, st.BestOnDemandPlan = 0, ""
	none := Summarize(st, Facts{})
	assert.Zero(t, none.BestOnDemandCostUSD)
	assert.Zero(t, none.SavingsVsBestOnDemandPct)
	assert.Equal(t, 70.0, none.SavingsPct, "without a best on-demand plan, the same machines on demand")
	assert.Equal(t, BaselineHolding, none.SavingsBaseline, "and it says so")
}

// The --json fields scripts read: the headline against the best on-demand plan, the holding
// comparison under its own name, and on_demand_cost_usd as before.
func TestSummaryJSONNamesEachBaseline(t *testing.T) {
	b, err := json.Marshal(Summarize(sampleStatus(), Facts{}))
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	for k, v := range map[string]any{
		"cost_usd": 3.0, "best_on_demand_cost_usd": 6.0, "savings_pct": 50.0, "savings_baseline": "best_on_demand",
		"savings_vs_best_on_demand_pct": 50.0, "holding_on_demand_cost_usd": 10.0, "savings_vs_holding_pct": 70.0,
		"on_demand_cost_usd": 10.0,
	} {
		assert.Equal(t, v, got[k], k)
	}
}

// The report's first cost rows compare with the job on its best on-demand plan; the same
// machines on demand come after, named as such.
func TestReportCostRowsLeadWithTheBestOnDemandPlan(t *testing.T) {
	st := sampleStatus()
	var b bytes.Buffer
	require.NoError(t, WriteMarkdown(&b, Summarize(st, Facts{}), st, ""))
	text := b.String()
	first := "| cost | $3.00: 50.0% saved against the job on its best on-demand plan |\n" +
		"| the job on its best on-demand plan, start to end | $6.00: P=1 D=2 / V100, 1.000 s/iter, $6.12/h |\n"
	assert.Contains(t, text, "|---|---|\n"+first, "the first rows of the table")
	assert.Contains(t, text, "| the same machines at on-demand prices | $10.00 (70.0% saved;")
	assert.NotContains(t, text, "same plans on on-demand")

	st.BestOnDemandCostUSD = 0
	b.Reset()
	require.NoError(t, WriteMarkdown(&b, Summarize(st, Facts{}), st, ""))
	assert.Contains(t, b.String(), "| cost | $3.00 (no best on-demand plan to compare with) |")
	assert.NotContains(t, b.String(), "best on-demand plan, start to end")
}

func TestReportListsTheOnDemandPurchasesAndWhy(t *testing.T) {
	st := sampleStatus()
	st.OnDemandPurchases = []training.OnDemandPurchase{{At: st.StartedAt.Add(20 * time.Second), GPUs: 4,
		Zones: map[string]int{"us-west-2a": 4, "us-east-2b": 0}, Why: "spot short: 0 spot GPUs can be had | the deadline needs 4",
		USDPerHour: 12.24}, {At: st.StartedAt.Add(25 * time.Second), GPUs: 1, Zones: map[string]int{"us-west-2a": 5}, Why: "recorded before"}}
	s := Summarize(st, Facts{Wall: time.Minute, TimeScale: 60})
	require.Len(t, s.OnDemandPurchases, 2)
	var b bytes.Buffer
	require.NoError(t, WriteMarkdown(&b, s, st, ""))
	assert.Contains(t, b.String(), "## On-demand purchases")
	assert.Contains(t, b.String(), "| at (s) | GPUs | where | USD/h | why |")
	assert.Contains(t, b.String(), "| 20.0 | 4 | us-east-2b: 0, us-west-2a: 4 | 12.24 | spot short: 0 spot GPUs can be had / the deadline needs 4 |",
		"what the purchase cost per hour, beside why")
	assert.Contains(t, b.String(), "| 25.0 | 1 | us-west-2a: 5 | not recorded | recorded before |")

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
