package servingwf

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/activities/servingact"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/workflows/internal/wftest"
)

// standIn has every activity of a deployment with the contract's signatures (the compiler
// checks them against the interfaces); registered through the production Register
// functions, each is mocked by the tests.
type standIn struct{ wftest.FleetStandIn }

var (
	_ serving.ControlActivities = standIn{}
	_ serving.NodeActivities    = standIn{}
	_ fleet.Activities          = standIn{}
)

func (standIn) Offerings(context.Context, serving.OfferingsRequest) ([]cloud.Offering, error) {
	return nil, nil
}
func (standIn) RunStage(context.Context, serving.StageAssignment) (serving.StageResult, error) {
	return serving.StageResult{}, nil
}

// world is a tiny scripted cloud (wftest.Cloud) and node side behind the stand-ins; its Log
// orders what happened: "ready <instance>", "released <instance>".
type world struct {
	*wftest.Cloud
	assignments []serving.StageAssignment
	// started is when each of assignments started (test clock); notices what noticeAt sent.
	started []time.Time
	notices []serving.PreemptionNotice
	// boot is how long a stage takes to report ready (negative: never).
	boot func(a serving.StageAssignment) time.Duration
	// offers is what the offerings activity answers (nil: one offering per zone z-a, z-b,
	// z-c at spot prices 1, 1.2, 1.5).
	offers func() []cloud.Offering
}

func newWorld() *world {
	c := wftest.NewCloud("V100-16")
	c.Price = func(zone string) float64 { return map[string]float64{"z-a": 1, "z-b": 1.2, "z-c": 1.5}[zone] }
	return &world{Cloud: c, boot: func(serving.StageAssignment) time.Duration { return 5 * time.Second }}
}

// startedAt is when assignment a (by its epoch) started.
func (w *world) startedAt(a serving.StageAssignment) time.Time {
	w.Lock()
	defer w.Unlock()
	for i, b := range w.assignments {
		if b.Epoch == a.Epoch {
			return w.started[i]
		}
	}
	return time.Time{}
}

// current is the latest assignment of (replica, stage) of the decode (or colocated) pool.
func (w *world) current(replica, stage int) serving.StageAssignment {
	return w.currentIn(serving.PoolDecode, replica, stage)
}

// currentIn is the latest assignment of (replica, stage) of a pool.
func (w *world) currentIn(pool string, replica, stage int) serving.StageAssignment {
	w.Lock()
	defer w.Unlock()
	for i := len(w.assignments) - 1; i >= 0; i-- {
		if a := w.assignments[i]; a.Pool == pool && a.Replica == replica && a.Stage == stage {
			return a
		}
	}
	return serving.StageAssignment{}
}

func (w *world) logged() []string {
	w.Lock()
	defer w.Unlock()
	return slices.Clone(w.Log)
}

func deployInput() serving.DeployInput {
	return serving.DeployInput{Spec: serving.Spec{Name: "chat", Model: serving.Model{Name: "tiny", Seed: 7}, Stages: 2}}
}

// newWorldEnv is a fresh world and a test environment on it.
func newWorldEnv(t *testing.T) (*world, *testsuite.TestWorkflowEnvironment) {
	w := newWorld()
	return w, newEnv(t, w)
}

func newEnv(t *testing.T, w *world) *testsuite.TestWorkflowEnvironment {
	env := w.NewEnv(standIn{}, func(env *testsuite.TestWorkflowEnvironment) {
		Register(env)
		servingact.RegisterControl(env, standIn{})
		servingact.RegisterNode(env, standIn{})
	})
	env.SetTestTimeout(30 * time.Second)
	env.OnActivity(serving.ActivityOfferings, mock.Anything, mock.Anything).Return(
		func(context.Context, serving.OfferingsRequest) ([]cloud.Offering, error) {
			w.Lock()
			defer w.Unlock()
			if w.offers != nil {
				return w.offers(), nil
			}
			return w.Offers("v1", 1, 1.2, 1.5), nil
		})
	// A stage serves until it is cancelled (a day of test clock); the node side reports it
	// ready after its boot time.
	env.OnActivity(serving.ActivityRunStage, mock.Anything, mock.Anything).After(24 * time.Hour).Return(
		func(_ context.Context, a serving.StageAssignment) (serving.StageResult, error) {
			return serving.StageResult{Replica: a.Replica, Stage: a.Stage, Epoch: a.Epoch}, nil
		})
	wftest.OnStarted(t, env, serving.ActivityRunStage, func(a serving.StageAssignment) {
		w.Lock()
		w.assignments = append(w.assignments, a)
		w.started = append(w.started, env.Now())
		w.Unlock()
		boot := w.boot(a)
		if boot < 0 {
			return
		}
		env.RegisterDelayedCallback(func() {
			w.Lock()
			alive := !w.Instances[a.InstanceID].State.Gone()
			if alive {
				w.Log = append(w.Log, "ready "+a.InstanceID)
			}
			w.Unlock()
			if alive {
				env.SignalWorkflow(serving.SignalStageReady, serving.StageReady{Pool: a.Pool, Replica: a.Replica, Stage: a.Stage, InstanceID: a.InstanceID,
					Epoch: a.Epoch, WorkerAddr: a.InstanceID + ":9000", HolderAddr: a.InstanceID + ":9100"})
			}
		}, boot)
	})
	return env
}

// noticeAt sends, at the given test-clock time, a preemption notice (2 minutes ahead) for the
// machine replica 0's stage runs on; the returned function gives that assignment.
func noticeAt(env *testsuite.TestWorkflowEnvironment, w *world, stage int, at time.Duration) func() serving.StageAssignment {
	var noticed serving.StageAssignment
	env.RegisterDelayedCallback(func() {
		noticed = w.current(0, stage)
		n := serving.PreemptionNotice{InstanceID: noticed.InstanceID, Kind: cloud.Notice, Deadline: env.Now().Add(2 * time.Minute)}
		w.Lock()
		w.notices = append(w.notices, n)
		w.Unlock()
		env.SignalWorkflow(serving.SignalPreemptionNotice, n)
	}, at)
	return func() serving.StageAssignment { return noticed }
}

// stopAt stops the deployment at the given test-clock time and keeps the update's result.
func stopAt(t *testing.T, env *testsuite.TestWorkflowEnvironment, at time.Duration, result *serving.Status) {
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(serving.UpdateStop, "stop", &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { t.Errorf("stop rejected: %v", err) },
			OnComplete: func(v any, err error) {
				require.NoError(t, err)
				if result != nil {
					*result = v.(serving.Status)
				}
			},
		}, serving.StopRequest{Reason: "test"})
	}, at)
}

// queryAt queries the deployment at the given test-clock time; the answer is in the result
// once the workflow has run.
func queryAt[T any](t *testing.T, env *testsuite.TestWorkflowEnvironment, name string, at time.Duration) *T {
	var v T
	env.RegisterDelayedCallback(func() { v = wftest.Query[T](t, env, name) }, at)
	return &v
}

// runUntilStopped runs the deployment of in, stopped at the given test-clock time (the stop
// update's result in stopped, unless nil), and returns its final status.
func runUntilStopped(t *testing.T, env *testsuite.TestWorkflowEnvironment, in serving.DeployInput, at time.Duration, stopped *serving.Status) serving.Status {
	t.Helper()
	stopAt(t, env, at, stopped)
	env.ExecuteWorkflow(ServingDeployment, in)
	return wftest.Result[serving.Status](t, env)
}

func TestTwoStageDeploymentBecomesServing(t *testing.T) {
	w, env := newWorldEnv(t)
	serving1 := queryAt[serving.Status](t, env, serving.QueryStatus, time.Minute)
	pipe := queryAt[serving.Pipeline](t, env, serving.QueryStages, time.Minute)
	var stopped serving.Status
	st := runUntilStopped(t, env, deployInput(), 2*time.Minute, &stopped)

	assert.Equal(t, serving.PhaseServing, serving1.Phase)
	require.Len(t, serving1.Stages, 2)
	for _, s := range serving1.Stages {
		assert.Equal(t, serving.StateReady, s.State)
	}
	assert.NotEqual(t, serving1.Stages[0].Zone, serving1.Stages[1].Zone, "a replica's stages are spread over zones")
	assert.Equal(t, serving.LayerRange{First: 0, End: 2}, serving1.Stages[0].Layers)
	assert.Equal(t, serving.LayerRange{First: 2, End: 4}, serving1.Stages[1].Layers)
	assert.Equal(t, 2, serving1.GPUs)
	assert.Greater(t, serving1.CostUSD, 0.0)

	assert.Equal(t, "tiny", pipe.Model)
	require.Len(t, pipe.Replicas, 1)
	assert.True(t, pipe.Replicas[0].Ready)
	require.Len(t, pipe.Replicas[0].Stages, 2)
	assert.Equal(t, serving1.Stages[0].WorkerAddr, pipe.Replicas[0].Stages[0].Addr)

	// Start order: the last stage first; stage 0 once stage 1 is ready, told its addresses.
	require.Len(t, w.assignments, 2)
	last, first := w.assignments[0], w.assignments[1]
	assert.Equal(t, 1, last.Stage)
	assert.Empty(t, last.NextHolderAddr, "stage 0 is not known when the last stage starts")
	assert.Equal(t, 0, first.Stage)
	assert.Equal(t, last.InstanceID+":9100", first.NextHolderAddr)
	assert.Equal(t, last.InstanceID+":9000", first.NextWorkerAddr)
	assert.Greater(t, first.Epoch, last.Epoch)
	assert.False(t, first.Restore || last.Restore)
	assert.True(t, first.Replication)
	assert.Equal(t, 4, first.Model.Layers, "the built-in model's dimensions")
	assert.Equal(t, 60.0, first.TimeScale, "the provider's time scale")

	assert.Equal(t, serving.PhaseStopped, st.Phase)
	assert.Equal(t, serving.PhaseStopped, stopped.Phase, "the stop update answers with the final status")
	assert.Empty(t, w.Leaked())
	assert.Zero(t, st.LeakedInstances)
}

func TestStageLostWithoutNoticeIsReplacedAndTheFailoverRecorded(t *testing.T) {
	w, env := newWorldEnv(t)
	var lost serving.StageAssignment
	env.RegisterDelayedCallback(func() {
		lost = w.current(0, 0)
		w.State(lost.InstanceID, cloud.StatePreempted) // no notice: the poll finds it
	}, time.Minute)
	mid := queryAt[serving.Status](t, env, serving.QueryStatus, 2*time.Minute)
	st := runUntilStopped(t, env, deployInput(), 3*time.Minute, nil)

	assert.Equal(t, serving.PhaseServing, mid.Phase, "serving again after the failover")
	assert.Equal(t, 1, st.Preemptions)
	require.Equal(t, 1, st.Failovers)
	require.Len(t, st.FailoverRecords, 1)
	fo := st.FailoverRecords[0]
	assert.False(t, fo.Notice)
	assert.Equal(t, 0, fo.Stage)
	assert.Equal(t, lost.InstanceID, fo.From)
	assert.NotEqual(t, lost.InstanceID, fo.To)
	assert.Greater(t, fo.Seconds, 0.0)
	assert.Equal(t, fo.Seconds, fo.DowntimeSeconds)

	repl := w.current(0, 0)
	assert.Equal(t, fo.To, repl.InstanceID)
	assert.True(t, repl.Restore, "the replacement restores its KV cache")
	assert.Zero(t, repl.PreloadSeconds, "a replacement after a loss has nothing running to preload beside")
	assert.Greater(t, repl.Epoch, lost.Epoch)
	other := w.current(0, 1)
	assert.Equal(t, other.InstanceID+":9100", repl.NextHolderAddr, "it restores from its successor's holder")
	assert.NotEqual(t, w.Instances[lost.InstanceID].Zone, w.Instances[repl.InstanceID].Zone, "the zone that preempted is avoided")
	assert.Empty(t, w.Leaked())
}

func TestNoticeMigratesTheStageBeforeTheMachineIsReleased(t *testing.T) {
	w, env := newWorldEnv(t)
	noticed := noticeAt(env, w, 1, time.Minute)
	migrating := queryAt[serving.Status](t, env, serving.QueryStatus, time.Minute+time.Second)
	mid := queryAt[serving.Status](t, env, serving.QueryStatus, 2*time.Minute)
	pipeMoving := queryAt[serving.Pipeline](t, env, serving.QueryStages, time.Minute+time.Second)
	pipeAfter := queryAt[serving.Pipeline](t, env, serving.QueryStages, 3*time.Minute-time.Second)
	st := runUntilStopped(t, env, deployInput(), 3*time.Minute, nil)

	// The stages query says the noticed stage is moving (its predecessor's agent then asks
	// faster), and no longer once it has moved.
	require.Len(t, pipeMoving.Replicas, 1)
	require.Len(t, pipeAfter.Replicas, 1)
	for i, s := range pipeMoving.Replicas[0].Stages {
		assert.Equal(t, s.Stage == 1, s.Moving, "mid-migration: %+v", s)
		assert.False(t, pipeAfter.Replicas[0].Stages[i].Moving, "after: %+v", pipeAfter.Replicas[0].Stages[i])
	}

	// While it migrates, the noticed stage still reads ready on its machine, and says noticed.
	require.Len(t, migrating.Stages, 2)
	for _, s := range migrating.Stages {
		if s.Stage == 1 {
			assert.Equal(t, noticed().InstanceID, s.InstanceID)
			assert.Equal(t, serving.StateReady, s.State)
			assert.False(t, s.NoticedAt.IsZero(), "the noticed stage says so: %+v", s)
		} else {
			assert.True(t, s.NoticedAt.IsZero(), "%+v", s)
		}
	}
	for _, s := range st.Stages {
		assert.True(t, s.NoticedAt.IsZero(), "after the migration no stage is noticed: %+v", s)
	}
	assert.Equal(t, serving.PhaseServing, mid.Phase)
	assert.Equal(t, 1, st.Notices)
	assert.Zero(t, st.Preemptions)
	require.Len(t, st.FailoverRecords, 1)
	fo := st.FailoverRecords[0]
	assert.True(t, fo.Notice)
	assert.Equal(t, 1, fo.Stage)
	assert.Equal(t, noticed().InstanceID, fo.From)
	assert.Zero(t, fo.DowntimeSeconds, "the replacement was ready before the machine went")

	repl := w.current(0, 1)
	assert.Equal(t, fo.To, repl.InstanceID)
	assert.True(t, repl.Restore)
	require.Len(t, w.notices, 1)
	left := w.notices[0].Deadline.Sub(w.startedAt(repl))
	assert.Equal(t, (left - SwitchReserve).Seconds(), repl.PreloadSeconds,
		"the standby may preload until the switch's reserve before the notice's deadline (%s left at its start)", left)
	log := w.logged()
	readyAt := slices.Index(log, "ready "+repl.InstanceID)
	releasedAt := slices.Index(log, "released "+noticed().InstanceID)
	require.GreaterOrEqual(t, readyAt, 0)
	require.GreaterOrEqual(t, releasedAt, 0)
	assert.Less(t, readyAt, releasedAt, "the replacement is ready before the noticed machine is released: %v", log)
	assert.NotEqual(t, w.Instances[noticed().InstanceID].Zone, w.Instances[repl.InstanceID].Zone)
	assert.Empty(t, w.Leaked())
}

func TestStopReleasesEverythingAndEndsStopped(t *testing.T) {
	w, env := newWorldEnv(t)
	in := deployInput()
	in.Spec.Replicas = 2
	var stopped serving.Status
	st := runUntilStopped(t, env, in, time.Minute, &stopped)
	assert.Equal(t, serving.PhaseStopped, st.Phase)
	assert.Equal(t, serving.PhaseStopped, stopped.Phase)
	assert.Len(t, w.Released, 4)
	assert.Empty(t, w.Leaked())
	assert.Zero(t, st.GPUs)
	assert.Empty(t, st.Instances)
}

func TestCancelReleasesEverything(t *testing.T) {
	w, env := newWorldEnv(t)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(ServingDeployment, deployInput())
	require.True(t, env.IsWorkflowCompleted())
	require.Error(t, env.GetWorkflowError())
	assert.Empty(t, w.Leaked())
	assert.Len(t, w.Released, 2)
}

func TestBadSpecFailsAtOnceNamingTheFields(t *testing.T) {
	w, env := newWorldEnv(t)
	in := deployInput()
	in.Spec.Name, in.Spec.Stages = "Chat!", 9
	env.ExecuteWorkflow(ServingDeployment, in)
	problems := wftest.BadSpec[serving.FieldError](t, env, serving.ErrTypeInvalidSpec, "name", "stages")
	var fields []string
	for _, p := range problems {
		fields = append(fields, p.Field)
	}
	assert.Contains(t, fields, "name")
	assert.Contains(t, fields, "stages")
	assert.Empty(t, w.Acquires, "nothing is bought for a bad spec")
}

func TestScaleUpdateValidatesAndAddsAReplica(t *testing.T) {
	w, env := newWorldEnv(t)
	var rejected []error
	var scaled serving.Status
	env.RegisterDelayedCallback(func() {
		for i, n := range []int{0, -1, serving.MaxReplicas + 1} {
			env.UpdateWorkflow(serving.UpdateScale, fmt.Sprintf("bad-%d", i), &testsuite.TestUpdateCallback{
				OnAccept:   func() { t.Errorf("scale to %d accepted", n) },
				OnReject:   func(err error) { rejected = append(rejected, err) },
				OnComplete: func(any, error) {},
			}, serving.ScaleRequest{Replicas: n})
		}
		env.UpdateWorkflow(serving.UpdateScale, "good", &testsuite.TestUpdateCallback{
			OnAccept:   func() {},
			OnReject:   func(err error) { t.Errorf("scale to 2 rejected: %v", err) },
			OnComplete: func(v any, err error) { require.NoError(t, err); scaled = v.(serving.Status) },
		}, serving.ScaleRequest{Replicas: 2})
	}, time.Minute)
	mid := queryAt[serving.Status](t, env, serving.QueryStatus, 2*time.Minute)
	pipe := queryAt[serving.Pipeline](t, env, serving.QueryStages, 2*time.Minute)
	st := runUntilStopped(t, env, deployInput(), 3*time.Minute, nil)
	require.Len(t, rejected, 3)
	assert.Contains(t, rejected[0].Error(), "replicas must be between 1 and")
	assert.Equal(t, 2, scaled.Replicas)
	assert.Equal(t, serving.PhaseServing, mid.Phase)
	assert.Len(t, mid.Stages, 4)
	require.Len(t, pipe.Replicas, 2)
	assert.True(t, pipe.Replicas[1].Ready)
	assert.Equal(t, serving.PhaseStopped, st.Phase)
	assert.Empty(t, w.Leaked())
}

func TestContinuesAsNewAndReattachesWithoutBuying(t *testing.T) {
	w, env := newWorldEnv(t)
	in := deployInput()
	in.Options.ContinueAsNewAfter = 10
	env.ExecuteWorkflow(ServingDeployment, in)
	require.True(t, env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	var next serving.DeployInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.Carried)
	require.Len(t, next.Carried.Slots, 2)
	for _, s := range next.Carried.Slots {
		assert.Equal(t, serving.StateReady, s.State)
		assert.NotEmpty(t, s.WorkerAddr)
	}
	assert.Len(t, next.Carried.Instances, 2)
	assert.Equal(t, cloud.TimeScale(60), next.Carried.TimeScale)
	bought := len(w.Acquires)

	env2 := newEnv(t, w)
	next.Options.ContinueAsNewAfter = 0
	mid := queryAt[serving.Status](t, env2, serving.QueryStatus, time.Minute)
	w.Lock()
	w.assignments = nil
	w.Unlock()
	st := runUntilStopped(t, env2, next, 2*time.Minute, nil)
	assert.Equal(t, serving.PhaseServing, mid.Phase)
	assert.Equal(t, bought, len(w.Acquires), "the next run buys nothing")
	require.Len(t, w.assignments, 2)
	for _, a := range w.assignments {
		assert.True(t, a.Adopt, "the next run re-attaches to the running workers")
	}
	assert.Equal(t, serving.PhaseStopped, st.Phase)
	assert.Empty(t, w.Leaked())
}
