package trainingwf

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/training"
)

// A job prices itself on its best on-demand plan once, at its first plan, over the offerings
// it found then, and keeps the answer in its status: the baseline its savings are measured
// against (issue 21: the same machines at on-demand prices flattered spot).
func TestTrainingJobKeepsItsBestOnDemandCost(t *testing.T) {
	w, env := newInterruptedJobEnv(t, planIn("z-a"))
	noticeBothLoseOne(env, w, nil) // a replan: the baseline is not asked again
	env.ExecuteWorkflow(TrainingJob, jobInput())
	st := jobResult(t, env)
	require.Equal(t, training.PhaseCompleted, st.Phase, st.Error)
	require.GreaterOrEqual(t, len(st.Plans), 2)

	assert.Equal(t, 42.0, st.BestOnDemandCostUSD)
	assert.Equal(t, "2 stages on demand, 0.500 s/iter, $8.00/h", st.BestOnDemandPlan)
	pct, ok := st.SavingsPct()
	assert.True(t, ok)
	assert.InDelta(t, 100*(1-st.CostUSD/42), pct, 1e-9)
	require.Len(t, w.baselines, 1, "asked once")
	req := w.baselines[0]
	assert.Equal(t, int64(100), req.Iterations, "the whole job")
	assert.Equal(t, "OPT-350", req.Model.Name)
	assert.Equal(t, 8, req.GlobalBatch)
	assert.Equal(t, training.DefaultLimits.MaxGPUs, req.MaxGPUs, "the job's own cap: the control plane's limit when the spec sets none")
	assert.Equal(t, w.plans[0].Offers, req.Offers, "the offerings of the first plan, before the job took any")
	for _, o := range req.Offers {
		assert.Positive(t, o.OnDemandPrice)
	}
}

// No on-demand plan to compare with is noted, and the job goes on without a baseline.
func TestTrainingJobWithoutABestOnDemandPlanGoesOn(t *testing.T) {
	w := newJobWorld()
	w.trainerRun = runsFor(0)
	w.baselineErr = temporal.NewNonRetryableApplicationError("no plan costs at most the cap", training.ErrTypeOverBudget, errors.New("cap"))
	env := newJobEnv(t, w, planIn("z-a"))
	st := runCompleted(t, env)
	assert.Zero(t, st.BestOnDemandCostUSD)
	_, ok := st.SavingsPct()
	assert.False(t, ok)
	noted := false
	for _, p := range st.Timeline {
		noted = noted || strings.Contains(p.Event, "no best on-demand plan")
	}
	assert.True(t, noted, "the timeline says why there is no baseline")
}

// A run recorded before the baseline existed replays without asking for it (the version
// best-on-demand-baseline is the default there): no local activity its history lacks.
func TestTrainingJobRecordedBeforeTheBaselineDoesNotAskForIt(t *testing.T) {
	w := newJobWorld()
	w.trainerRun = runsFor(0)
	env := newJobEnv(t, w, planIn("z-a"))
	env.OnGetVersion(versionBestOnDemand, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	st := runCompleted(t, env)
	assert.Empty(t, w.baselines)
	assert.Zero(t, st.BestOnDemandCostUSD)
}
