package trainingwf

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/taskqueue"
	"github.com/schooner-ml/schooner/training"
)

// A notice for one machine of a two-stage job reaches the trainers on the other machine too
// (NoticeTrainers on its node queue), so both stages save on the same emergency grid; the
// machine that goes already heard it from its own metadata.
func TestTrainingJobRelaysANoticeToItsOtherMachines(t *testing.T) {
	_, env := newInterruptedJobEnv(t, planIn("z-a"))
	var mu sync.Mutex
	var relayed []string // "<task queue> <instance>"
	env.OnActivity(training.ActivityNoticeTrainers, mock.Anything, mock.Anything).Return(func(ctx context.Context, req training.NoticeRequest) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		relayed = append(relayed, activity.GetInfo(ctx).TaskQueue+" "+req.Instance)
		return true, nil
	})
	deadline := env.Now().Add(2 * time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(training.SignalPreemptionNotice, training.PreemptionNotice{InstanceID: "i-1", Kind: cloud.Notice, Deadline: deadline})
		env.SignalWorkflow(training.SignalPreemptionNotice, training.PreemptionNotice{InstanceID: "i-1", Kind: cloud.Notice, Deadline: deadline})
	}, 20*time.Second)
	st := runCompleted(t, env)
	assert.Equal(t, 2, st.Notices)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{taskqueue.Node("i-2") + " i-1"}, relayed, "to the other machine, once")
}

// A zone's machines taken together are one loss: the "preempted" reports queued behind the
// first are confirmed with it, so the job asks no trainer on a machine already gone to stop
// (its agent never answers, and the stop waited out its bound, billing the machine) and
// replans once.
func TestTrainingJobTakesAZonesLossesTogether(t *testing.T) {
	assertOneLossOfBoth(t, "i-1", "i-2")
}

// A machine taken with the first but whose own report has not come yet is found by the same
// describe: every held machine is asked about when a loss is confirmed, so it is one loss, one
// replan, and no trainer on it is asked to stop.
func TestTrainingJobFindsTheMachinesTakenWithALossBeforeTheirReports(t *testing.T) {
	assertOneLossOfBoth(t, "i-1")
}

// assertOneLossOfBoth preempts both machines of a two-machine job between two polls, with a
// "preempted" report for each of reported, and checks the job took them as one loss: two
// preemptions, one replan, no trainer on i-2 asked to stop.
func assertOneLossOfBoth(t *testing.T, reported ...string) {
	t.Helper()
	w, env := newInterruptedJobEnv(t, planIn("z-a"))
	var mu sync.Mutex
	var stopped []string // task queues asked to stop trainers
	env.OnActivity(training.ActivityStopTrainers, mock.Anything, mock.Anything).Return(func(ctx context.Context, _ training.StopRequest) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		stopped = append(stopped, activity.GetInfo(ctx).TaskQueue)
		return 1, nil
	})
	env.RegisterDelayedCallback(func() {
		commitStep(env, w, 40)
		w.State("i-1", cloud.StatePreempted)
		w.State("i-2", cloud.StatePreempted)
		for _, id := range reported {
			env.SignalWorkflow(training.SignalPreemptionNotice, training.PreemptionNotice{InstanceID: id, Kind: cloud.Preempted})
		}
	}, 22*time.Second) // between two polls, which would describe both at once
	st := runCompleted(t, env)
	assert.Equal(t, 2, st.Preemptions)
	assert.Equal(t, 1, st.Replans, "one loss, one replan")
	mu.Lock()
	defer mu.Unlock()
	assert.NotContains(t, stopped, taskqueue.Node("i-2"), "i-2 is gone: nobody to ask")
}
