package trainingwf

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
)

// policyInput is jobInput under the deadline policy (spot with fallback and a deadline), with a
// deadline of 240 simulated hours that spot alone keeps easily.
func policyInput() training.JobInput {
	in := jobInput()
	in.Spec.Spot = training.SpotWithFallback
	in.Spec.Deadline = "240h"
	return in
}

// A job whose policy keeps deciding the same thing trains on its first plan: a decision that
// changes nothing costs no restart.
func TestTrainingJobUnderAnUnchangingPolicyDoesNotReplan(t *testing.T) {
	w, env := newInterruptedJobEnv(t, planIn("z-a"))
	in := policyInput()
	env.ExecuteWorkflow(TrainingJob, in)
	st := jobResult(t, env)
	require.Equal(t, training.PhaseCompleted, st.Phase, st.Error)
	assert.Len(t, st.Plans, 1)
	assert.Greater(t, len(w.decisions), 10, "it decided every 5 simulated minutes of its hour")
	assert.Empty(t, st.OnDemandPurchases)
}

// Under the deadline policy a machine under a preemption notice is not held capacity (the
// next plan leaves it out too), and the zone that preempted is not avoided behind the
// policy's back (the policy weighs zones itself). Counted and avoided, a zone whose machines
// were all under notice kept the policy's spot caps on it while the plan could use none of
// it: the job waited with GPUs on offer elsewhere (issue 21, the 178 h start of the
// full-stack comparison).
func TestTrainingJobUnderThePolicyCountsNoNoticedMachine(t *testing.T) {
	preempted := false
	w, env := newInterruptedJobEnv(t, planUntilMoved(&preempted, twoStagePlan("z-b", cloud.Spot, 1)))
	in := policyInput()
	noticeBothLoseOne(env, w, func() { preempted = true })
	env.ExecuteWorkflow(TrainingJob, in)
	st := jobResult(t, env)
	require.Equal(t, training.PhaseCompleted, st.Phase, st.Error)
	require.Equal(t, 1, st.Preemptions)

	w.Lock()
	defer w.Unlock()
	var after *training.SpotDecisionRequest
	for i := range w.decisions {
		if w.decisions[i].Running.Preempted["z-a"] > 0 {
			after = &w.decisions[i]
			break
		}
	}
	require.NotNil(t, after, "the decision after the preemption is told of it")
	assert.Zero(t, after.Running.Spot["z-a"], "i-1 is under notice: not capacity the job still has")
	var zones []string
	for _, o := range w.plans[len(w.plans)-1].Offers {
		zones = append(zones, o.Zone)
	}
	assert.Contains(t, zones, "z-a", "the policy, not the strategy's avoid list, decides about the zone")
}

// A job the policy put on on-demand GPUs goes back to spot when the policy says spot keeps
// the deadline again: it replans (reason "deadline") on spot machines and releases the
// on-demand ones then, not at its end.
func TestTrainingJobUnderThePolicyDropsOnDemandWhenSpotReturns(t *testing.T) {
	w, env := newInterruptedJobEnv(t, func(req training.PlanJobRequest) (training.PlanJobResult, error) {
		if req.OnDemand {
			return twoStagePlan("z-a", cloud.OnDemand, 1), nil
		}
		return twoStagePlan("z-a", cloud.Spot, 1), nil
	})
	w.decide = func(n int, req training.SpotDecisionRequest) training.SpotDecision {
		if n == 1 {
			return onDemandIn("z-a", 2) // the first plan: spot is short
		}
		return spotOnly(req) // from the next decision on, spot keeps the deadline
	}
	in := policyInput()
	env.ExecuteWorkflow(TrainingJob, in)
	st := jobResult(t, env)
	require.Equal(t, training.PhaseCompleted, st.Phase, st.Error)

	require.Len(t, st.Plans, 2)
	assert.Equal(t, "deadline", st.Plans[1].Reason)
	require.Len(t, st.OnDemandPurchases, 1, "one purchase, none when dropping")
	require.Empty(t, w.Leaked())
	w.Lock()
	defer w.Unlock()
	require.Len(t, w.Acquires, 2)
	assert.Equal(t, cloud.OnDemand, w.Acquires[0].Capacity)
	assert.Equal(t, cloud.Spot, w.Acquires[1].Capacity, "back to spot")
	last := w.plans[len(w.plans)-1]
	assert.False(t, last.OnDemand)
	assert.Equal(t, map[string]int{}, last.OnDemandGPUs, "the plan keeps to the decision: no on-demand GPU")
	events := []string{}
	spotAlone := false
	for _, p := range st.Timeline {
		events = append(events, p.Event)
		spotAlone = spotAlone || maps.Equal(p.GPUs, map[string]int{"sim/z-a/A100-40(spot)": 2})
	}
	assert.Contains(t, events, "deadline policy: back to 0 on-demand GPUs")
	assert.True(t, spotAlone, "the job held its spot machines without the on-demand ones before its end")
}
