//go:build !agentonly

package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/schooner-ml/schooner/report"
	"github.com/schooner-ml/schooner/training"
)

// The demo's summary leads with the cost against the job on its best on-demand plan; the same
// machines at on-demand prices come second, named as such.
func TestDemoSummaryLeadsWithTheBestOnDemandPlan(t *testing.T) {
	st := training.JobStatus{JobID: "j", Phase: training.PhaseCompleted, CostUSD: 3, HoldingOnDemandCostUSD: 10,
		BestOnDemandCostUSD: 6, BestOnDemandPlan: "P=1 D=2"}
	var out bytes.Buffer
	printDemoSummary(&out, report.Summarize(st, report.Facts{}), report.Files{})
	assert.Contains(t, out.String(), "  cost           $3.00 on spot vs $6.00 for the job on its best on-demand plan, start to end (50.0% saved)\n"+
		"                 vs $10.00 for the same machines at on-demand prices (70.0% saved)\n")

	st.BestOnDemandCostUSD = 0
	out.Reset()
	printDemoSummary(&out, report.Summarize(st, report.Facts{}), report.Files{})
	assert.Contains(t, out.String(), "  cost           $3.00 on spot (no best on-demand plan to compare with)\n")
}
