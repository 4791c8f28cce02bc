package trainingwf

import (
	"fmt"
	"math"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/training"
)

// The search attributes a TrainingJob keeps current (registered by
// workers.EnsureSearchAttributes), so the UI and `temporal workflow list --query` filter jobs.
var (
	saPhase    = temporal.NewSearchAttributeKeyKeyword("SchoonerPhase")
	saCost     = temporal.NewSearchAttributeKeyFloat64("SchoonerCostUSD")
	saGPUs     = temporal.NewSearchAttributeKeyInt64("SchoonerGPUs")
	saZones    = temporal.NewSearchAttributeKeyKeywordList("SchoonerZones")
	saProgress = temporal.NewSearchAttributeKeyFloat64("SchoonerProgress")
)

// progress is the fraction of iterations done.
func (j *job) progress() float64 {
	if j.status.Iterations <= 0 {
		return 0
	}
	return math.Min(1, float64(j.status.Iteration)/float64(j.status.Iterations))
}

// publish updates the search attributes and the story in the UI. Attributes are upserted
// only when they changed visibly (cost in cents, progress in per cent), so the history does
// not grow with every progress signal.
func (j *job) publish(ctx workflow.Context) {
	workflow.SetCurrentDetails(ctx, j.story())
	cost := math.Round(j.status.CostUSD*100) / 100
	prog := math.Floor(j.progress()*100) / 100
	zones := append([]string{}, j.status.Zones...)
	sig := fmt.Sprintf("%s|%.2f|%d|%s|%.2f", j.status.Phase, cost, j.totalGPUs(), strings.Join(zones, ","), prog)
	if sig == j.lastSA {
		return
	}
	// Cost moves with every event; only phase, GPUs, zones or a per-cent of progress
	// trigger an upsert, and the cost goes along.
	if j.lastSA != "" && sameExceptCost(sig, j.lastSA) {
		return
	}
	j.lastSA = sig
	err := workflow.UpsertTypedSearchAttributes(ctx,
		saPhase.ValueSet(j.status.Phase), saCost.ValueSet(cost), saGPUs.ValueSet(int64(j.totalGPUs())),
		saZones.ValueSet(zones), saProgress.ValueSet(prog))
	if err != nil {
		workflow.GetLogger(ctx).Warn("upserting search attributes", "error", err)
	}
	if j.memoStatus {
		if err := workflow.UpsertMemo(ctx, map[string]any{training.MemoStatus: j.snapshot().Published()}); err != nil {
			workflow.GetLogger(ctx).Warn("upserting the status memo", "error", err)
		}
	}
}

// sameExceptCost compares two attribute signatures ignoring the cost field.
func sameExceptCost(a, b string) bool {
	pa, pb := strings.Split(a, "|"), strings.Split(b, "|")
	if len(pa) != len(pb) {
		return false
	}
	for i := range pa {
		if i != 1 && pa[i] != pb[i] {
			return false
		}
	}
	return true
}
