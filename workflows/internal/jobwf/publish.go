package jobwf

import (
	"fmt"
	"math"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The search attributes every job keeps current (registered by
// workers.EnsureSearchAttributes), so the UI and `temporal workflow list --query` filter
// training jobs and deployments alike.
var (
	saPhase = temporal.NewSearchAttributeKeyKeyword("SchoonerPhase")
	saCost  = temporal.NewSearchAttributeKeyFloat64("SchoonerCostUSD")
	saGPUs  = temporal.NewSearchAttributeKeyInt64("SchoonerGPUs")
	saZones = temporal.NewSearchAttributeKeyKeywordList("SchoonerZones")
)

// Visible is what a job shows in its search attributes.
type Visible struct {
	Phase   string
	CostUSD float64
	GPUs    int
	Zones   []string
	// More is the job's own visible state besides phase, GPUs and zones (progress,
	// membership, failovers); a change in it upserts too.
	More string
}

// Publisher keeps a job's search attributes and status memo. An upsert is a command, so it
// runs only when something visible changed: the cost moves with every event and goes along
// with the next upsert, and the history does not grow with every poll or progress signal.
type Publisher struct {
	last string
}

// Publish sets the story as the workflow's current details and, when v changed visibly
// since the last upsert, upserts the search attributes (phase, cost in cents, GPUs, zones,
// then extra) and, unless memo is nil, the memo it returns.
func (p *Publisher) Publish(ctx workflow.Context, story string, v Visible, memo func() map[string]any, extra ...temporal.SearchAttributeUpdate) {
	workflow.SetCurrentDetails(ctx, story)
	zones := append([]string{}, v.Zones...)
	sig := fmt.Sprintf("%s|%d|%s|%s", v.Phase, v.GPUs, strings.Join(zones, ","), v.More)
	if sig == p.last {
		return
	}
	p.last = sig
	cost := math.Round(v.CostUSD*100) / 100
	updates := append([]temporal.SearchAttributeUpdate{saPhase.ValueSet(v.Phase), saCost.ValueSet(cost),
		saGPUs.ValueSet(int64(v.GPUs)), saZones.ValueSet(zones)}, extra...)
	if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
		workflow.GetLogger(ctx).Warn("upserting search attributes", "error", err)
	}
	if memo == nil {
		return
	}
	if err := workflow.UpsertMemo(ctx, memo()); err != nil {
		workflow.GetLogger(ctx).Warn("upserting the status memo", "error", err)
	}
}
