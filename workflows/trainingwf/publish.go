package trainingwf

import (
	"fmt"
	"math"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workflows/internal/jobwf"
)

// saProgress is the search attribute a TrainingJob keeps besides those of every job
// (jobwf.Publisher), registered by workers.EnsureSearchAttributes.
var saProgress = temporal.NewSearchAttributeKeyFloat64("SchoonerProgress")

// progress is the fraction of iterations done.
func (j *job) progress() float64 {
	if j.status.Iterations <= 0 {
		return 0
	}
	return math.Min(1, float64(j.status.Iteration)/float64(j.status.Iterations))
}

// publish updates the search attributes and the story in the UI. Attributes are upserted
// only when they changed visibly (phase, GPUs, zones, progress in per cent; the cost goes
// along), so the history does not grow with every progress signal.
func (j *job) publish(ctx workflow.Context) {
	prog := math.Floor(j.progress()*100) / 100
	var memo func() map[string]any
	if j.memoStatus {
		memo = func() map[string]any { return map[string]any{training.MemoStatus: j.snapshot().Published()} }
	}
	j.pub.Publish(ctx, j.story(), jobwf.Visible{Phase: j.status.Phase, CostUSD: j.status.CostUSD, GPUs: j.totalGPUs(),
		Zones: j.status.Zones, More: fmt.Sprintf("%.2f", prog)}, memo, saProgress.ValueSet(prog))
}
