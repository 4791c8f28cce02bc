package trainingwf

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/training"
)

// A job whose policy keeps deciding the same thing trains on its first plan: a decision that
// changes nothing costs no restart.
func TestTrainingJobUnderAnUnchangingPolicyDoesNotReplan(t *testing.T) {
	w := newJobWorld()
	w.trainerRun = firstEpochRunsLong
	env := newJobEnv(t, w, planIn("z-a"))
	in := jobInput()
	in.Spec.Spot = training.SpotWithFallback
	in.Spec.Deadline = "240h"
	env.ExecuteWorkflow(TrainingJob, in)
	st := jobResult(t, env)
	require.Equal(t, training.PhaseCompleted, st.Phase, st.Error)
	assert.Len(t, st.Plans, 1)
	assert.Greater(t, len(w.decisions), 10, "it decided every 5 simulated minutes of its hour")
	assert.Empty(t, st.OnDemandPurchases)
}
