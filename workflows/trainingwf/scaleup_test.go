package trainingwf

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/training"
)

// stagesPlan is a plan of n one-replica stages in zone on spot machines, iter seconds per
// iteration.
func stagesPlan(zone string, n int, iter float64) training.PlanJobResult {
	p := twoStagePlan(zone, cloud.Spot, iter)
	rep, key := p.Plan.Stages[0].Replicas, p.Replicas[0].Key
	p.Plan.Stages, p.Replicas = nil, nil
	for s := range n {
		p.Plan.Stages = append(p.Plan.Stages, planner.Stage{FirstLayer: s * 26 / n, LastLayer: (s+1)*26/n - 1, Replicas: rep})
		p.Replicas = append(p.Replicas, training.PlannedReplica{Rank: s, Stage: s, Key: key, GPUs: 1, GPUsPerInstance: 1})
	}
	p.Summary = fmt.Sprintf("%d stages in %s", n, zone)
	return p
}

// capacityReturns is a job world whose first epoch runs an hour on a 1-stage plan of
// before seconds per iteration, until, 30 s in, capacity for a 3-stage plan of after seconds
// comes back (returned runs then, as the capacity returns, for the test to add to it).
func capacityReturns(t *testing.T, before, after float64, returned func(w *jobWorld)) (*jobWorld, *testsuite.TestWorkflowEnvironment) {
	w := newJobWorld()
	w.trainerRun = firstEpochRunsLong
	var back atomic.Bool
	env := newJobEnv(t, w, func(training.PlanJobRequest) (training.PlanJobResult, error) {
		if back.Load() {
			return stagesPlan("z-a", 3, after), nil
		}
		return stagesPlan("z-a", 1, before), nil
	})
	env.RegisterDelayedCallback(func() {
		if returned != nil {
			returned(w)
		}
		back.Store(true)
	}, 30*time.Second)
	return w, env
}

// A job that started on one GPU, because that was all there was, moves to the faster plan
// once the capacity comes back: it acquires the missing instances while it trains, and
// replans onto them without buying anything more.
func TestTrainingJobScalesUpWhenCapacityReturns(t *testing.T) {
	w, env := capacityReturns(t, 20, 10, nil)
	st := runCompleted(t, env)
	require.Len(t, st.Plans, 2)
	assert.Equal(t, "capacity returned", st.Plans[1].Reason)
	assert.Equal(t, 1, st.Replans)
	require.Len(t, w.Acquires, 2, "one instance at the start, two more while it trained, nothing at the replan")
	assert.Equal(t, 2, w.Acquires[1].Count)
	assert.ElementsMatch(t, []string{"i-1", "i-2", "i-3"}, st.Plans[1].Instances)
	require.Empty(t, w.Leaked())
}

// When the capacity a better plan needs does not all come, what came is released and the
// running plan trains on: a look for capacity never costs a restart. The next look, once the
// capacity is there, moves the job.
func TestTrainingJobKeepsItsPlanWhenReturnedCapacityFallsShort(t *testing.T) {
	w, env := capacityReturns(t, 20, 10, func(w *jobWorld) {
		w.Lock()
		w.ShortOnce["z-a"] = true
		w.Unlock()
	})
	st := runCompleted(t, env)
	require.Len(t, st.Plans, 2, "the short attempt made no plan")
	assert.Equal(t, "capacity returned", st.Plans[1].Reason)
	require.Len(t, w.Acquires, 3, "the start, the short attempt, the one that came")
	assert.True(t, slices.Contains(w.Released, "i-2"), "the one instance the short attempt got is released")
	assert.NotContains(t, st.Plans[1].Instances, "i-2")
	require.Empty(t, w.Leaked())
}

// A better plan that saves less than a look's worth of time over the rest of the run (here
// 100 iterations × 1 s) is not worth a restart.
func TestTrainingJobDoesNotScaleUpForLittleGain(t *testing.T) {
	w, env := capacityReturns(t, 2, 1, nil)
	st := runCompleted(t, env)
	assert.Len(t, w.Acquires, 1, "nothing bought to scale up")
	assert.Len(t, st.Plans, 1, "the first epoch ran to the end")
}
