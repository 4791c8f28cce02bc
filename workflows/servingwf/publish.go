package servingwf

import (
	"fmt"
	"math"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/serving"
)

// The search attributes a deployment keeps current (registered by
// workers.EnsureSearchAttributes, the same as a TrainingJob's), so the UI and
// `temporal workflow list --query` filter deployments.
var (
	saPhase = temporal.NewSearchAttributeKeyKeyword("SchoonerPhase")
	saCost  = temporal.NewSearchAttributeKeyFloat64("SchoonerCostUSD")
	saGPUs  = temporal.NewSearchAttributeKeyInt64("SchoonerGPUs")
	saZones = temporal.NewSearchAttributeKeyKeywordList("SchoonerZones")
)

// publish updates the story in the UI, and the search attributes and the status memo when
// something visible changed (phase, GPUs, zones, membership, failovers): cost alone moves
// with every event and goes along with the next upsert, so the history does not grow with
// every poll.
func (d *dep) publish(ctx workflow.Context) {
	workflow.SetCurrentDetails(ctx, d.story())
	zones := append([]string{}, d.status.Zones...)
	sig := fmt.Sprintf("%s|%d|%s|%d|%d", d.status.Phase, d.status.GPUs, strings.Join(zones, ","), d.version, d.status.Failovers)
	if sig == d.lastSA {
		return
	}
	d.lastSA = sig
	cost := math.Round(d.status.CostUSD*100) / 100
	if err := workflow.UpsertTypedSearchAttributes(ctx, saPhase.ValueSet(d.status.Phase), saCost.ValueSet(cost),
		saGPUs.ValueSet(int64(d.status.GPUs)), saZones.ValueSet(zones)); err != nil {
		workflow.GetLogger(ctx).Warn("upserting search attributes", "error", err)
	}
	if err := workflow.UpsertMemo(ctx, map[string]any{serving.MemoStatus: d.snapshot().Published()}); err != nil {
		workflow.GetLogger(ctx).Warn("upserting the status memo", "error", err)
	}
}

// story is the workflow's current details in the UI.
func (d *dep) story() string {
	var b strings.Builder
	ready := 0
	for _, s := range d.slots {
		if s.state == serving.StateReady {
			ready++
		}
	}
	fmt.Fprintf(&b, "**%s** (%s) — %s, %d/%d stages ready (%d replicas × %d stages)", d.spec.Name, d.spec.ModelID(),
		d.status.Phase, ready, len(d.slots), d.replicas(), d.depth())
	fmt.Fprintf(&b, "\n\n%d GPUs in %s, $%.2f/h, $%.2f so far (on demand: $%.2f)", d.status.GPUs,
		strings.Join(d.status.Zones, ", "), d.status.USDPerHour, d.status.CostUSD, d.status.OnDemandCostUSD)
	fmt.Fprintf(&b, "\n\n%d failovers, %d preemptions, %d notices", d.status.Failovers, d.status.Preemptions, d.status.Notices)
	if n := len(d.status.FailoverRecords); n > 0 {
		f := d.status.FailoverRecords[n-1]
		fmt.Fprintf(&b, "\n\nlast failover: replica %d stage %d, %s → %s in %.1f s (notice: %t)", f.Replica, f.Stage, f.From, f.To, f.Seconds, f.Notice)
	}
	if d.status.Error != "" {
		fmt.Fprintf(&b, "\n\nerror: %s", d.status.Error)
	}
	return b.String()
}
