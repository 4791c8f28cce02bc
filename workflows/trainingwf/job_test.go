package trainingwf

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/activities/trainingact"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/planner"
	"github.com/schooner-ml/schooner/policy"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workflows/internal/wftest"
)

// jobWorld is a tiny scripted cloud (wftest.Cloud) and store behind the mocked control
// activities.
type jobWorld struct {
	*wftest.Cloud
	durable     int64
	assignments []training.Assignment
	plans       []training.PlanJobRequest
	trainerRun  func(a training.Assignment) (time.Duration, error)
	verifyErr   error
	verified    []training.VerifyStateRequest
	// liveAtVerify is how many instances were still live when each verification began.
	liveAtVerify []int
	// decisions are the deadline policy's requests; decide answers them (nil: spotOnly).
	decisions []training.SpotDecisionRequest
	decide    func(n int, req training.SpotDecisionRequest) training.SpotDecision
	// baselines are the job's questions for its best on-demand plan; each is answered with
	// baseline, or baselineErr.
	baselines   []training.BestOnDemandRequest
	baseline    training.OnDemandBaseline
	baselineErr error
}

// spotOnly is a policy decision to hold every spot GPU on offer and no on-demand GPU.
func spotOnly(req training.SpotDecisionRequest) training.SpotDecision {
	d := training.SpotDecision{Spot: policy.Placement{}, OnDemand: policy.Placement{}}
	for _, o := range req.Offers {
		d.Spot[o.Zone] += o.SpotCapacity * max(o.GPUsPerInstance, 1)
	}
	for z, g := range req.Running.Spot {
		d.Spot[z] += g
	}
	d.Request.Spot = d.Spot.GPUs()
	return d
}

// onDemandIn is a policy decision to hold n on-demand GPUs in zone and nothing on spot.
func onDemandIn(zone string, n int) training.SpotDecision {
	return training.SpotDecision{Request: policy.Request{OnDemand: n, OnDemandZone: zone, Why: "spot short: the deadline needs on-demand"},
		Spot: policy.Placement{}, OnDemand: policy.Placement{zone: n}, OnDemandUSDPerGPUHour: 1.5}
}

func newJobWorld() *jobWorld {
	return &jobWorld{Cloud: wftest.NewCloud("A100-40"), durable: -1,
		baseline: training.OnDemandBaseline{CostUSD: 42, Plan: "2 stages on demand, 0.500 s/iter, $8.00/h", IterSeconds: 0.5, USDPerHour: 8}}
}

// twoStagePlan is a plan of two stages, one replica each, in zone.
func twoStagePlan(zone string, capacity cloud.CapacityType, iter float64) training.PlanJobResult {
	st := func(a, b int) planner.Stage {
		return planner.Stage{FirstLayer: a, LastLayer: b, Replicas: []planner.Replica{{GPU: "A100-40", TP: 1, Zone: zone, GPUsPerNode: 1, InstanceType: "a1"}}}
	}
	p := planner.Plan{Model: "OPT-350", GlobalBatch: 8, MicroBatch: 1, Stages: []planner.Stage{st(0, 12), st(13, 25)}}
	key := cloud.OfferingKey{Capacity: capacity, InstanceType: "a1", Zone: zone}
	return training.PlanJobResult{Plan: p, Estimate: planner.Estimate{IterTime: iter, USDPerHour: 2}, Summary: "2 stages in " + zone,
		ModelLayers: 26, Replicas: []training.PlannedReplica{
			{Rank: 0, Stage: 0, Key: key, GPUs: 1, GPUsPerInstance: 1}, {Rank: 1, Stage: 1, Key: key, GPUs: 1, GPUsPerInstance: 1}}}
}

// planIn is a planner that always plans twoStagePlan in zone, on spot machines.
func planIn(zone string) func(training.PlanJobRequest) (training.PlanJobResult, error) {
	return func(training.PlanJobRequest) (training.PlanJobResult, error) {
		return twoStagePlan(zone, cloud.Spot, 1), nil
	}
}

// runsFor is a trainer that runs every epoch for d.
func runsFor(d time.Duration) func(training.Assignment) (time.Duration, error) {
	return func(training.Assignment) (time.Duration, error) { return d, nil }
}

// firstEpochRunsLong is a trainer that runs the first epoch for an hour (until something
// interrupts it) and finishes every later one at once.
func firstEpochRunsLong(a training.Assignment) (time.Duration, error) {
	if a.Epoch == 1 {
		return time.Hour, nil
	}
	return 0, nil
}

// newInterruptedJobEnv is the set-up of the tests that interrupt a running job: a fresh world
// whose first epoch runs until something interrupts it (firstEpochRunsLong), wired into a test
// environment whose planner is planFor.
func newInterruptedJobEnv(t *testing.T, planFor func(training.PlanJobRequest) (training.PlanJobResult, error)) (*jobWorld, *testsuite.TestWorkflowEnvironment) {
	w := newJobWorld()
	w.trainerRun = firstEpochRunsLong
	return w, newJobEnv(t, w, planFor)
}

// planUntilMoved is a planner that plans twoStagePlan in z-a until *moved is set (the test
// sets it when it takes the machine), and after from then on.
func planUntilMoved(moved *bool, after training.PlanJobResult) func(training.PlanJobRequest) (training.PlanJobResult, error) {
	return func(training.PlanJobRequest) (training.PlanJobResult, error) {
		if !*moved {
			return twoStagePlan("z-a", cloud.Spot, 1), nil
		}
		return after, nil
	}
}

// commitStep makes step durable and tells the job, as the first epoch's saver would.
func commitStep(env *testsuite.TestWorkflowEnvironment, w *jobWorld, step int64) {
	w.Lock()
	w.durable = step
	w.Unlock()
	env.SignalWorkflow(training.SignalCheckpointCommitted, training.CheckpointCommitted{Epoch: 1, Rank: 0, Step: step})
}

// notify signals a preemption notice for each instance, as the relay does.
func notify(env *testsuite.TestWorkflowEnvironment, ids ...string) {
	for _, id := range ids {
		env.SignalWorkflow(training.SignalPreemptionNotice, training.PreemptionNotice{InstanceID: id, Kind: cloud.Notice})
	}
}

// preempt takes id back in the cloud and tells the job, as the relay does.
func preempt(env *testsuite.TestWorkflowEnvironment, w *jobWorld, id string) {
	w.State(id, cloud.StatePreempted)
	env.SignalWorkflow(training.SignalPreemptionNotice, training.PreemptionNotice{InstanceID: id, Kind: cloud.Preempted})
}

// noticeBothLoseOne scripts a zone going away: at 20 s step 40 is durable and both machines
// get a notice; at 22 s i-2 is taken (then is called first, unless nil).
func noticeBothLoseOne(env *testsuite.TestWorkflowEnvironment, w *jobWorld, then func()) {
	env.RegisterDelayedCallback(func() {
		commitStep(env, w, 40)
		notify(env, "i-1", "i-2")
	}, 20*time.Second)
	env.RegisterDelayedCallback(func() {
		if then != nil {
			then()
		}
		preempt(env, w, "i-2")
	}, 22*time.Second)
}

func jobInput() training.JobInput {
	return training.JobInput{
		Spec: training.Spec{Name: "t", Model: training.Model{Name: "OPT-350"}, GlobalBatch: 8, Iterations: 100,
			Checkpoint: training.Checkpoint{Every: 10, Store: "file:///tmp/x"}, Trainer: training.Trainer{Kind: "sim", Seed: 7}},
		TimeScale: 60, Options: training.JobOptions{PollInterval: 5 * time.Second},
	}
}

// standIn has every activity of the job with the contract's signatures (the compiler checks
// them against the interfaces); registered through the production Register functions, each is
// mocked by the tests.
type standIn struct{ wftest.FleetStandIn }

var (
	_ training.ControlActivities = standIn{}
	_ training.NodeActivities    = standIn{}
	_ fleet.Activities           = standIn{}
)

func (standIn) JobOfferings(context.Context, training.JobOfferingsRequest) ([]cloud.Offering, error) {
	return nil, nil
}
func (standIn) PlanJob(context.Context, training.PlanJobRequest) (training.PlanJobResult, error) {
	return training.PlanJobResult{}, nil
}
func (standIn) DecideSpot(context.Context, training.SpotDecisionRequest) (training.SpotDecision, error) {
	return training.SpotDecision{}, nil
}
func (standIn) BestOnDemand(context.Context, training.BestOnDemandRequest) (training.OnDemandBaseline, error) {
	return training.OnDemandBaseline{}, nil
}
func (standIn) LatestDurableCheckpoint(context.Context, string) (int64, error)        { return 0, nil }
func (standIn) VerifyTrainedState(context.Context, training.VerifyStateRequest) error { return nil }
func (standIn) RunTrainer(context.Context, training.Assignment) (training.TrainerResult, error) {
	return training.TrainerResult{}, nil
}
func (standIn) AdmissionLimits(context.Context) (training.Limits, error) {
	return training.DefaultLimits, nil
}
func (standIn) StopTrainers(context.Context, training.StopRequest) (int, error) { return 0, nil }
func (standIn) NoticeTrainers(context.Context, training.NoticeRequest) (bool, error) {
	return false, nil
}

// newJobEnv wires the world into a test environment. planFor decides each plan.
func newJobEnv(t *testing.T, w *jobWorld, planFor func(req training.PlanJobRequest) (training.PlanJobResult, error)) *testsuite.TestWorkflowEnvironment {
	env := w.NewEnv(standIn{}, func(env *testsuite.TestWorkflowEnvironment) {
		trainingact.RegisterControl(env, standIn{})
		trainingact.RegisterNode(env, standIn{})
	})
	env.OnActivity(training.ActivityJobOfferings, mock.Anything, mock.Anything).Return(w.Offers("a1", 1, 1.2), nil)
	env.OnActivity(training.ActivityPlanJob, mock.Anything, mock.Anything).Return(func(_ context.Context, req training.PlanJobRequest) (training.PlanJobResult, error) {
		w.Lock()
		w.plans = append(w.plans, req)
		w.Unlock()
		return planFor(req)
	})
	env.OnActivity(training.ActivityDecideSpot, mock.Anything, mock.Anything).Return(func(_ context.Context, req training.SpotDecisionRequest) (training.SpotDecision, error) {
		w.Lock()
		w.decisions = append(w.decisions, req)
		n, decide := len(w.decisions), w.decide
		w.Unlock()
		if decide == nil {
			return spotOnly(req), nil
		}
		return decide(n, req), nil
	})
	env.OnActivity(training.ActivityBestOnDemand, mock.Anything, mock.Anything).Return(func(_ context.Context, req training.BestOnDemandRequest) (training.OnDemandBaseline, error) {
		w.Lock()
		defer w.Unlock()
		w.baselines = append(w.baselines, req)
		return w.baseline, w.baselineErr
	})
	env.OnActivity(training.ActivityLatestCheckpoint, mock.Anything, mock.Anything).Return(func(context.Context, string) (int64, error) {
		w.Lock()
		defer w.Unlock()
		return w.durable, nil
	})
	env.OnActivity(training.ActivityVerifyTrainedState, mock.Anything, mock.Anything).Return(func(_ context.Context, req training.VerifyStateRequest) error {
		live := len(w.Leaked())
		w.Lock()
		defer w.Unlock()
		w.verified = append(w.verified, req)
		w.liveAtVerify = append(w.liveAtVerify, live)
		return w.verifyErr
	})
	wftest.OnStarted(t, env, training.ActivityRunTrainer, func(a training.Assignment) {
		w.Lock()
		w.assignments = append(w.assignments, a)
		w.Unlock()
	})
	// The trainer mocks take test-clock time: one per delay class the scripts use.
	for _, d := range []time.Duration{0, time.Second, 10 * time.Second, time.Hour} {
		d := d
		env.OnActivity(training.ActivityRunTrainer, mock.Anything, mock.MatchedBy(func(a training.Assignment) bool {
			got, _ := w.trainerRun(a)
			return got == d
		})).After(d).Return(func(_ context.Context, a training.Assignment) (training.TrainerResult, error) {
			_, err := w.trainerRun(a)
			if err != nil {
				return training.NoResult(a.Rank), err
			}
			w.Lock()
			w.durable = a.Iterations
			w.Unlock()
			return training.TrainerResult{Rank: a.Rank, FinalIteration: a.Iterations, LastCheckpoint: a.Iterations}, nil
		})
	}
	return env
}

func jobResult(t *testing.T, env *testsuite.TestWorkflowEnvironment) training.JobStatus {
	t.Helper()
	return wftest.Result[training.JobStatus](t, env)
}

// runCompleted runs the job of jobInput to its end and returns its final status; the test
// ends unless the job completed.
func runCompleted(t *testing.T, env *testsuite.TestWorkflowEnvironment) training.JobStatus {
	t.Helper()
	env.ExecuteWorkflow(TrainingJob, jobInput())
	st := jobResult(t, env)
	require.Equal(t, training.PhaseCompleted, st.Phase)
	return st
}

// splitPlan is twoStagePlan in z-a with its second stage in z-b.
func splitPlan() training.PlanJobResult {
	p := twoStagePlan("z-a", cloud.Spot, 1)
	p.Plan.Stages[1].Replicas[0].Zone = "z-b"
	p.Replicas[1].Key.Zone = "z-b"
	return p
}

func TestTrainingJobCompletes(t *testing.T) {
	w := newJobWorld()
	w.trainerRun = runsFor(0)
	env := newJobEnv(t, w, planIn("z-a"))
	st := runCompleted(t, env)
	require.True(t, st.StateVerified)
	require.Equal(t, int64(100), st.LastCheckpoint)
	require.Len(t, st.Plans, 1)
	require.Empty(t, w.Leaked())
	require.Len(t, w.assignments, 2)
	a := w.assignments[0]
	require.Equal(t, -1, int(a.RestoreStep))
	require.Equal(t, 2, a.Plan.World)
	require.True(t, w.assignments[0].Saver && w.assignments[1].Saver)
	ns := "file:///tmp/x/jobs/default-test-workflow-id/default-test-run-id"
	assert.Equal(t, ns, st.CheckpointStore, "the job's own namespace under the spec's store")
	assert.Equal(t, ns, a.Store, "trainers save there")
	require.Len(t, w.verified, 1)
	assert.Equal(t, ns, w.verified[0].Store, "and the final state is verified there")
	assert.Equal(t, []int{0}, w.liveAtVerify, "every machine is released before the verification, which reads only the store")
}

func TestTrainingJobWhoseFinalStateDoesNotVerifyFails(t *testing.T) {
	w := newJobWorld()
	w.trainerRun = runsFor(0)
	w.verifyErr = temporal.NewNonRetryableApplicationError("step 100 differs from an uninterrupted run", "StateMismatch", nil)
	env := newJobEnv(t, w, planIn("z-a"))
	env.ExecuteWorkflow(TrainingJob, jobInput())
	app, _ := wftest.Failure(t, env, "a job whose state does not verify is never reported completed")
	assert.Equal(t, training.ErrTypeStateMismatch, app.Type())
	assert.Empty(t, w.Leaked(), "and it still releases everything")
}

func TestTrainingJobReplansWithWhatICEleft(t *testing.T) {
	w := newJobWorld()
	w.ShortOnce["z-a"] = true
	w.trainerRun = runsFor(0)
	env := newJobEnv(t, w, func(req training.PlanJobRequest) (training.PlanJobResult, error) {
		for _, o := range req.Offers {
			if o.Zone == "z-a" {
				return twoStagePlan("z-a", cloud.Spot, 1), nil
			}
		}
		// z-a is marked unavailable: a plan on the survivor in z-a plus one in z-b.
		return splitPlan(), nil
	})
	runCompleted(t, env)
	require.GreaterOrEqual(t, len(w.plans), 2)
	require.Len(t, w.plans[1].Survivors, 1, "the replan keeps the instance the short acquire got")
	for _, o := range w.plans[1].Offers {
		require.NotEqual(t, "z-a", o.Zone, "the short offering is left out of the replan")
	}
	require.Empty(t, w.Leaked())
}

func TestTrainingJobSurvivesPreemption(t *testing.T) {
	// After the preemption: a one-stage plan in z-b (another shape).
	after := twoStagePlan("z-b", cloud.Spot, 2)
	after.Plan.Stages = []planner.Stage{{FirstLayer: 0, LastLayer: 25, Replicas: after.Plan.Stages[0].Replicas}}
	after.Replicas = after.Replicas[:1]
	preempted := false
	w, env := newInterruptedJobEnv(t, planUntilMoved(&preempted, after))
	env.RegisterDelayedCallback(func() {
		commitStep(env, w, 40)
		notify(env, "i-2")
	}, 20*time.Second)
	env.RegisterDelayedCallback(func() {
		preempted = true
		preempt(env, w, "i-2")
	}, 22*time.Second)
	st := runCompleted(t, env)
	require.Equal(t, 1, st.Preemptions)
	require.Equal(t, 1, st.Notices)
	require.Equal(t, 1, st.Replans)
	require.Equal(t, 1, st.Restores)
	require.Len(t, st.Plans, 2)
	require.Equal(t, "preemption", st.Plans[1].Reason)
	last := w.assignments[len(w.assignments)-1]
	require.Equal(t, 2, last.Epoch)
	require.Equal(t, int64(40), last.RestoreStep)
	require.Equal(t, 1, last.Plan.World)
	require.Empty(t, w.Leaked())
	for _, o := range w.plans[len(w.plans)-1].Offers {
		require.NotEqual(t, "z-a", o.Zone, "the zone that preempted is avoided")
	}
}

func TestTrainingJobLostWithoutNoticeAndFalseAlarm(t *testing.T) {
	w := newJobWorld()
	w.trainerRun = func(a training.Assignment) (time.Duration, error) {
		switch {
		case a.Epoch == 1 && a.Rank == 1:
			// A heartbeat problem on a live machine: a false alarm.
			return time.Second, errors.New("heartbeat lost")
		case a.Epoch <= 2:
			return time.Hour, nil
		}
		return 0, nil
	}
	env := newJobEnv(t, w, planIn("z-a"))
	// Epoch 2's machine i-1 is reclaimed with no notice; the poll finds it.
	env.RegisterDelayedCallback(func() { w.State("i-1", cloud.StatePreempted) }, 60*time.Second)
	st := runCompleted(t, env)
	require.Equal(t, 1, st.Preemptions)
	require.Equal(t, 0, st.LostInstances)
	epochs := map[int][]string{}
	for _, a := range w.assignments {
		epochs[a.Epoch] = append(epochs[a.Epoch], a.InstanceID)
	}
	require.ElementsMatch(t, epochs[1], epochs[2], "a false alarm relaunches on the same instances")
	require.NotContains(t, epochs[3], "i-1")
	require.Empty(t, w.Leaked())
}

func TestTrainingJobCancelReleases(t *testing.T) {
	w := newJobWorld()
	w.trainerRun = runsFor(time.Hour)
	env := newJobEnv(t, w, planIn("z-a"))
	env.RegisterDelayedCallback(env.CancelWorkflow, 30*time.Second)
	env.ExecuteWorkflow(TrainingJob, jobInput())
	require.True(t, env.IsWorkflowCompleted())
	require.Error(t, env.GetWorkflowError())
	require.Empty(t, w.Leaked())
	require.Len(t, w.Released, 2)
}

func TestTrainingJobSetBudgetValidator(t *testing.T) {
	w := newJobWorld()
	w.trainerRun = runsFor(0)
	env := newJobEnv(t, w, planIn("z-a"))
	var rejected, accepted bool
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(training.UpdateSetBudget, "bad", &testsuite.TestUpdateCallback{
			OnReject: func(error) { rejected = true }, OnAccept: func() {}, OnComplete: func(any, error) {}},
			training.SetBudgetRequest{Budget: training.Budget{USDPerHour: -1}})
		env.UpdateWorkflow(training.UpdateSetBudget, "good", &testsuite.TestUpdateCallback{
			OnReject: func(error) {}, OnAccept: func() { accepted = true }, OnComplete: func(any, error) {}},
			training.SetBudgetRequest{Budget: training.Budget{USDPerHour: 10}})
	}, 0)
	w.trainerRun = runsFor(10 * time.Second)
	env.ExecuteWorkflow(TrainingJob, jobInput())
	st := jobResult(t, env)
	require.True(t, rejected)
	require.True(t, accepted)
	require.Equal(t, 10.0, st.Budget.USDPerHour)
}

// A spot-with-fallback job with a deadline follows the deadline policy: when a decision asks
// for on-demand GPUs it did not hold, the job replans within the decision's caps and buys them.
func TestTrainingJobDeadlineAddsOnDemand(t *testing.T) {
	w := newJobWorld()
	w.trainerRun = firstEpochRunsLong
	w.decide = func(n int, req training.SpotDecisionRequest) training.SpotDecision {
		if n == 1 {
			return spotOnly(req) // the first plan: spot alone
		}
		return onDemandIn("z-a", 2) // the next decision, at the first poll due
	}
	env := newJobEnv(t, w, func(req training.PlanJobRequest) (training.PlanJobResult, error) {
		if req.OnDemand {
			return twoStagePlan("z-a", cloud.OnDemand, 1), nil
		}
		// Spot alone: 100 iterations × 120 s / 60 = 200 s wall, past the 60 s deadline.
		return twoStagePlan("z-a", cloud.Spot, 120), nil
	})
	in := jobInput()
	in.Spec.Spot = training.SpotWithFallback
	in.Spec.Deadline = "1h" // simulated: one minute of wall time at 60×
	env.ExecuteWorkflow(TrainingJob, in)
	st := jobResult(t, env)
	require.Equal(t, training.PhaseCompleted, st.Phase)
	require.Len(t, st.Plans, 2)
	require.Equal(t, "deadline", st.Plans[1].Reason)
	last := w.Acquires[len(w.Acquires)-1]
	require.Equal(t, cloud.OnDemand, last.Capacity)
	require.Empty(t, w.Leaked())

	lastPlan := w.plans[len(w.plans)-1]
	assert.Equal(t, map[string]int{"z-a": 2}, lastPlan.OnDemandGPUs, "the plan keeps to the decision's caps")
	assert.Equal(t, map[string]int{}, lastPlan.SpotGPUs, "no spot: the decision asked for none")
	require.Len(t, st.OnDemandPurchases, 1)
	assert.Equal(t, 2, st.OnDemandPurchases[0].GPUs)
	assert.Contains(t, st.OnDemandPurchases[0].Why, "spot short")
	assert.Equal(t, 3.0, st.OnDemandPurchases[0].USDPerHour, "the 2 GPUs it added at the decision's $1.50 per GPU-hour")
	first := w.decisions[0].Running
	assert.Equal(t, int64(100), first.Iterations)
	assert.Equal(t, time.Hour, first.Deadline, "the deadline in the provider's time")
	assert.True(t, first.Restarting, "decided while planning")
}

func TestTrainingJobPauseResume(t *testing.T) {
	w, env := newInterruptedJobEnv(t, planIn("z-a"))
	var paused training.JobStatus
	noop := func() {}
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(training.UpdatePause, "p", &testsuite.TestUpdateCallback{OnReject: func(err error) { t.Error(err) }, OnAccept: noop,
			OnComplete: func(r any, err error) { require.NoError(t, err); paused = r.(training.JobStatus) }})
	}, 10*time.Second)
	env.RegisterDelayedCallback(func() {
		w.Lock()
		w.durable = 30
		w.Unlock()
		env.SignalWorkflow(training.SignalCheckpointCommitted, training.CheckpointCommitted{Epoch: 1, Rank: 0, Step: 30})
	}, 15*time.Second)
	var leakedWhilePaused []string
	env.RegisterDelayedCallback(func() {
		leakedWhilePaused = w.Leaked()
		env.UpdateWorkflow(training.UpdateResume, "r", &testsuite.TestUpdateCallback{OnReject: func(err error) { t.Error(err) }, OnAccept: noop,
			OnComplete: func(any, error) {}})
	}, 5*time.Minute)
	env.ExecuteWorkflow(TrainingJob, jobInput())
	st := jobResult(t, env)
	require.True(t, paused.Paused)
	require.Equal(t, training.PhasePaused, paused.Phase)
	require.Empty(t, leakedWhilePaused, "a paused job holds no instance")
	require.Equal(t, training.PhaseCompleted, st.Phase)
	require.Equal(t, "resume", st.Plans[len(st.Plans)-1].Reason)
	require.Equal(t, int64(30), w.assignments[len(w.assignments)-1].RestoreStep)
}

func TestTrainingJobContinuesAsNew(t *testing.T) {
	w := newJobWorld()
	w.trainerRun = runsFor(time.Hour)
	env := newJobEnv(t, w, planIn("z-a"))
	in := jobInput()
	in.Options.ContinueAsNewAfter = 12
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(training.SignalCheckpointCommitted, training.CheckpointCommitted{Epoch: 1, Rank: 0, Step: 20})
	}, 6*time.Second)
	env.ExecuteWorkflow(TrainingJob, in)
	require.True(t, env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can))
	var next training.JobInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.Carried)
	require.Len(t, next.Carried.Instances, 2)
	require.Len(t, next.Carried.Placement, 2)
	require.Equal(t, 1, next.Carried.Status.CheckpointsCommitted)
	require.Equal(t, int64(20), next.Carried.Status.LastCheckpoint)
	require.Empty(t, w.Released, "instances are carried, not released")

	// The next run relaunches the carried plan without planning again.
	w2 := newJobWorld()
	w2.Instances, w2.Next, w2.durable = w.Instances, w.Next, 20
	w2.trainerRun = func(training.Assignment) (time.Duration, error) { return 0, nil }
	env2 := newJobEnv(t, w2, func(training.PlanJobRequest) (training.PlanJobResult, error) {
		return twoStagePlan("z-a", cloud.Spot, 1), nil
	})
	next.Options.ContinueAsNewAfter = 0
	env2.ExecuteWorkflow(TrainingJob, next)
	st := jobResult(t, env2)
	require.Equal(t, training.PhaseCompleted, st.Phase)
	require.Empty(t, w2.plans, "the carried plan is relaunched as is")
	require.Empty(t, w2.baselines, "and the carried baseline is not asked again")
	assert.Equal(t, 42.0, st.BestOnDemandCostUSD)
	require.Equal(t, 2, st.Epoch)
	require.Equal(t, int64(20), w2.assignments[0].RestoreStep)
	require.Empty(t, w2.Leaked())
}

func TestTrainingJobHeartbeatTimeoutConfirmedLost(t *testing.T) {
	w := newJobWorld()
	w.trainerRun = func(a training.Assignment) (time.Duration, error) {
		switch {
		case a.Epoch == 1 && a.Rank == 0:
			// The node died without a notice: the provider says terminated.
			w.State(a.InstanceID, cloud.StateTerminated)
			return 10 * time.Second, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
		case a.Epoch == 1:
			return time.Hour, nil
		}
		return 0, nil
	}
	env := newJobEnv(t, w, planIn("z-a"))
	in := jobInput()
	in.Options.PollInterval = time.Hour // only the heartbeat timeout can find the loss
	env.ExecuteWorkflow(TrainingJob, in)
	st := jobResult(t, env)
	require.Equal(t, training.PhaseCompleted, st.Phase)
	require.Equal(t, 0, st.Preemptions, "terminated, not reclaimed: a lost machine is not a preemption")
	require.Equal(t, 1, st.LostInstances)
	require.Equal(t, "lost", st.Plans[len(st.Plans)-1].Reason)
	require.Empty(t, w.Leaked())
}

func TestTrainingJobReplacesStuckInstance(t *testing.T) {
	w := newJobWorld()
	w.trainerRun = func(a training.Assignment) (time.Duration, error) {
		switch {
		case a.Epoch == 1 && a.InstanceID == "i-1":
			// Running at the provider, but no node agent ever picked the task up.
			return time.Second, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
		case a.Epoch == 1:
			return time.Hour, nil
		}
		return 0, nil
	}
	env := newJobEnv(t, w, planIn("z-a"))
	st := runCompleted(t, env)
	require.Equal(t, 0, st.Preemptions, "a stuck machine is replaced, not counted as a preemption")
	require.Contains(t, w.Released, "i-1")
	for _, a := range w.assignments {
		if a.Epoch == 2 {
			require.NotEqual(t, "i-1", a.InstanceID)
		}
	}
	require.Empty(t, w.Leaked())
}

func TestTrainingJobBudgetExhaustedFailsAndReleases(t *testing.T) {
	w := newJobWorld()
	w.trainerRun = runsFor(time.Hour)
	env := newJobEnv(t, w, planIn("z-a"))
	in := jobInput()
	in.Spec.Budget.TotalUSD = 1 // 2 instances × $1/h × 60: a dollar in 30 s of wall time
	env.ExecuteWorkflow(TrainingJob, in)
	require.True(t, env.IsWorkflowCompleted())
	err := env.GetWorkflowError()
	require.Error(t, err)
	require.Contains(t, err.Error(), "budget")
	require.Empty(t, w.Leaked())
}

func TestTrainingJobRefusesABadSpecAtOnceNamingTheField(t *testing.T) {
	w := newJobWorld()
	env := newJobEnv(t, w, func(training.PlanJobRequest) (training.PlanJobResult, error) {
		t.Fatal("a bad spec must not be planned")
		return training.PlanJobResult{}, nil
	})
	in := jobInput()
	in.Spec.Iterations = -5
	in.Spec.Checkpoint.Store = ""
	env.ExecuteWorkflow(TrainingJob, in)
	problems := wftest.BadSpec[training.FieldError](t, env, training.ErrTypeInvalidSpec, "iterations", "checkpoint.store")
	assert.GreaterOrEqual(t, len(problems), 2)
	assert.Empty(t, w.Acquires, "nothing is bought for a bad spec")
	assert.Empty(t, w.plans)
}

func TestTrainingJobAppliesDefaultsAndTakesTheProvidersTimeScale(t *testing.T) {
	w := newJobWorld()
	w.trainerRun = runsFor(0)
	env := newJobEnv(t, w, planIn("z-a"))
	in := jobInput()
	in.TimeScale = 1 // what a user typed; the provider (mocked at 60×) wins
	in.Spec.Trainer.Kind, in.Spec.Objective, in.Spec.Spot = "", "", ""
	env.ExecuteWorkflow(TrainingJob, in)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.NotEmpty(t, w.assignments)
	assert.Equal(t, 60.0, w.assignments[0].TimeScale, "iteration pacing uses the provider's scale")
	assert.Equal(t, training.TrainerSim, w.assignments[0].Trainer.Kind, "the defaults are applied by the workflow")
	require.NotEmpty(t, w.plans)
	assert.Equal(t, training.ObjectiveThroughput, w.plans[0].Objective)
}

func TestTrainingJobRefusesAPastDeadlineAndJobsOverTheLimits(t *testing.T) {
	for name, c := range map[string]struct {
		edit  func(*training.JobInput)
		field string
	}{
		"past deadline": {func(in *training.JobInput) { in.Spec.Deadline = "2020-01-01T00:00:00Z" }, "deadline"},
		"iterations":    {func(in *training.JobInput) { in.Spec.Iterations = training.DefaultLimits.MaxIterations + 1 }, "iterations"},
	} {
		t.Run(name, func(t *testing.T) {
			w := newJobWorld()
			env := newJobEnv(t, w, func(training.PlanJobRequest) (training.PlanJobResult, error) {
				t.Fatal("a refused job must not be planned")
				return training.PlanJobResult{}, nil
			})
			in := jobInput()
			c.edit(&in)
			env.ExecuteWorkflow(TrainingJob, in)
			app, err := wftest.Failure(t, env)
			assert.Equal(t, training.ErrTypeInvalidSpec, app.Type())
			assert.Contains(t, err.Error(), c.field)
			assert.Empty(t, w.Acquires)
		})
	}
}

func TestTrainingJobBuysNothingWithABudgetTooSmallForAMinute(t *testing.T) {
	w := newJobWorld()
	env := newJobEnv(t, w, planIn("z-a"))
	in := jobInput()
	in.Spec.Budget.TotalUSD = 0.0001
	env.ExecuteWorkflow(TrainingJob, in)
	err := env.GetWorkflowError()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nothing bought")
	assert.Empty(t, w.Acquires)
}

func TestTrainingJobFailsAtOnceWhenTheBudgetRulesOutEveryPlan(t *testing.T) {
	w := newJobWorld()
	env := newJobEnv(t, w, func(training.PlanJobRequest) (training.PlanJobResult, error) {
		return training.PlanJobResult{}, temporal.NewNonRetryableApplicationError("over the cap", training.ErrTypeOverBudget, nil)
	})
	env.ExecuteWorkflow(TrainingJob, jobInput())
	err := env.GetWorkflowError()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "over the cap")
	assert.Len(t, w.plans, 1, "an over-budget plan is not retried for capacity")
}

func TestTrainingJobReplanCountsTheCapacityItJustTook(t *testing.T) {
	w := newJobWorld()
	w.ShortOnce["z-b"] = true
	w.trainerRun = runsFor(0)
	env := newJobEnv(t, w, func(req training.PlanJobRequest) (training.PlanJobResult, error) {
		if len(req.Survivors) == 0 { // the first round: one stage in each zone
			return splitPlan(), nil
		}
		return twoStagePlan("z-a", cloud.Spot, 1), nil
	})
	runCompleted(t, env)
	require.GreaterOrEqual(t, len(w.plans), 2)
	require.Len(t, w.plans[1].Survivors, 1, "the first round got its z-a instance only")
	found := false
	for _, o := range w.plans[1].Offers {
		if o.Zone == "z-a" {
			found = true
			assert.Equal(t, 7, o.SpotCapacity, "the next round sees z-a's capacity less the instance the job took there")
		}
	}
	require.True(t, found)
	require.Empty(t, w.Leaked())
}

// Instances of one zone get their notices together and are taken one by one: the replan after
// the first loss does not keep the others under notice, so their losses do not make a replan
// each.
func TestTrainingJobReplanDropsInstancesUnderNotice(t *testing.T) {
	w, env := newInterruptedJobEnv(t, planIn("z-b"))
	noticeBothLoseOne(env, w, nil)
	st := runCompleted(t, env)
	require.Equal(t, 2, st.Notices)
	require.Equal(t, 1, st.Replans)
	// plans[0] and [1] are the first plan's two rounds (before and after acquiring); the
	// last is the replan after i-2 was lost (a look for returned capacity may come between).
	require.GreaterOrEqual(t, len(w.plans), 3)
	require.Len(t, w.plans[1].Survivors, 2)
	replan := -1
	for k := 2; k < len(w.plans) && replan < 0; k++ {
		if !slices.ContainsFunc(w.plans[k].Survivors, func(in cloud.Instance) bool { return in.ID == "i-2" }) {
			replan = k // the first plan without the lost i-2 (looks for capacity before keep it)
		}
	}
	require.GreaterOrEqual(t, replan, 2)
	assert.Empty(t, w.plans[replan].Survivors, "i-1 is under notice: the replan does not keep it")
	require.Empty(t, w.Leaked(), "and it is released")
}

// The replan's ranks are not put back on a machine under notice even when the new plan wants
// its zone and shape: new machines are bought, and the noticed one is released.
func TestTrainingJobReplanPlacesNoRankOnAMachineUnderNotice(t *testing.T) {
	w, env := newInterruptedJobEnv(t, planIn("z-a"))
	noticeBothLoseOne(env, w, nil)
	st := runCompleted(t, env)
	require.Equal(t, 1, st.Replans)
	last := w.assignments[len(w.assignments)-1]
	require.Equal(t, 2, last.Epoch)
	for _, a := range w.assignments {
		if a.Epoch == 2 {
			assert.NotEqual(t, "i-1", a.InstanceID, "i-1 is under notice")
		}
	}
	require.Empty(t, w.Leaked(), "i-1 is released")
}

// A job that loses its machines and finds no spot capacity buys on-demand capacity when waiting
// would miss its deadline, instead of waiting (the deadline was only checked while training).
func TestTrainingJobWaitingForCapacityBuysOnDemandToKeepTheDeadline(t *testing.T) {
	w := newJobWorld()
	w.trainerRun = firstEpochRunsLong
	w.decide = func(n int, req training.SpotDecisionRequest) training.SpotDecision {
		if n <= 2 {
			return spotOnly(req) // the first plan, and the replan after the loss: spot
		}
		return onDemandIn("z-a", 2) // the decision made while waiting
	}
	lost := false
	env := newJobEnv(t, w, func(req training.PlanJobRequest) (training.PlanJobResult, error) {
		switch {
		case req.OnDemand:
			return twoStagePlan("z-a", cloud.OnDemand, 1), nil
		case lost:
			return training.PlanJobResult{}, errors.New("no spot capacity left")
		}
		// 100 iterations × 40 s simulated = 67 s of wall time at 60×, past the 60 s deadline;
		// the machines are lost (at 2 s) before the first poll's deadline check (at 5 s).
		return twoStagePlan("z-a", cloud.Spot, 40), nil
	})
	env.RegisterDelayedCallback(func() {
		lost = true
		preempt(env, w, "i-2")
	}, 2*time.Second)
	in := jobInput()
	in.Spec.Spot = training.SpotWithFallback
	in.Spec.Deadline = "1h" // simulated: one minute of wall time at 60×
	env.ExecuteWorkflow(TrainingJob, in)
	st := jobResult(t, env)
	require.Equal(t, training.PhaseCompleted, st.Phase, st.Error)
	assert.Equal(t, "deadline", st.Plans[1].Reason)
	require.Len(t, st.Plans, 2)
	last := w.Acquires[len(w.Acquires)-1]
	require.Equal(t, cloud.OnDemand, last.Capacity, "it bought on-demand capacity instead of waiting for spot")
	require.Empty(t, w.Leaked())
	require.GreaterOrEqual(t, len(w.decisions), 3)
	assert.Equal(t, map[string]int{"z-a": 1}, w.decisions[1].Running.Preempted, "the replan's decision saw the GPU lost")
	assert.Empty(t, w.decisions[2].Running.Preempted, "counted once")
}

// A job with no capacity waits MaxWaitForCapacity of provider time, whatever the time scale:
// at 60× one simulated hour is one wall minute (it used to be 60 rounds of 5 wall seconds).
func TestTrainingJobWaitsForCapacityInProviderTime(t *testing.T) {
	w := newJobWorld()
	env := newJobEnv(t, w, func(training.PlanJobRequest) (training.PlanJobResult, error) {
		return training.PlanJobResult{}, errors.New("no capacity anywhere")
	})
	in := jobInput()
	in.Options.MaxWaitForCapacity = time.Hour
	start := env.Now()
	var midWait training.JobStatus
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(training.QueryStatus)
		require.NoError(t, err)
		require.NoError(t, v.Get(&midWait))
	}, 30*time.Second)
	env.ExecuteWorkflow(TrainingJob, in)
	require.True(t, env.IsWorkflowCompleted())
	require.Error(t, env.GetWorkflowError(), "the drought outlasted the wait")
	assert.Equal(t, training.PhaseWaiting, midWait.Phase, "a waiting job says so (status, SchoonerPhase, the UI)")
	waited := env.Now().Sub(start)
	assert.GreaterOrEqual(t, waited, time.Minute, "an hour of provider time at 60x")
	assert.Less(t, waited, time.Minute+2*in.Options.WithDefaults().RetryWait, "and not much more")
	assert.Empty(t, w.Acquires, "nothing was bought")
}

// The UI shows a job's story as its current details: which model, the phase and progress,
// GPUs and zones, cost against on-demand, preemptions and the last checkpoint, the plan.
func TestTrainingJobTellsItsStoryInTheUI(t *testing.T) {
	_, env := newInterruptedJobEnv(t, planIn("z-a"))
	var details string
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow("__temporal_workflow_metadata")
		require.NoError(t, err)
		var md sdkpb.WorkflowMetadata
		require.NoError(t, v.Get(&md))
		details = md.GetCurrentDetails()
	}, 30*time.Second)
	runCompleted(t, env)
	for _, want := range []string{"**t** (OPT-350) — training", "2 GPUs in z-a", "so far (the whole job on its best on-demand plan: $42.00; the same machines on demand so far: $", "preemptions survived", "current plan (initial)"} {
		assert.Contains(t, details, want)
	}
}

// A job that loses a machine and finds no plan gives back the survivor it holds once it has
// waited HoldWhileWaiting (provider time), instead of paying for it through the whole
// drought; when capacity returns it buys what the plan needs and completes.
func TestTrainingJobWaitingForCapacityReleasesWhatItHolds(t *testing.T) {
	lost, returned := false, false
	w, env := newInterruptedJobEnv(t, func(training.PlanJobRequest) (training.PlanJobResult, error) {
		if lost && !returned {
			return training.PlanJobResult{}, errors.New("no capacity anywhere")
		}
		return twoStagePlan("z-a", cloud.Spot, 1), nil
	})
	var during training.JobStatus
	env.RegisterDelayedCallback(func() {
		lost = true
		preempt(env, w, "i-2")
	}, 20*time.Second)
	env.RegisterDelayedCallback(func() { // 16 simulated minutes after the loss at 60×
		v, err := env.QueryWorkflow(training.QueryStatus)
		require.NoError(t, err)
		require.NoError(t, v.Get(&during))
	}, 36*time.Second)
	env.RegisterDelayedCallback(func() { returned = true }, 60*time.Second)
	st := runCompleted(t, env)
	assert.Contains(t, []string{training.PhaseWaiting, training.PhasePlanning}, during.Phase, "still without a plan")
	assert.Empty(t, during.Instances, "the survivor i-1 was given back while waiting: %+v", during.GPUs)
	w.Lock()
	assert.Contains(t, w.Released, "i-1")
	w.Unlock()
	found := false
	for _, p := range st.Timeline {
		found = found || strings.HasPrefix(p.Event, "released the 1 instances held through")
	}
	assert.True(t, found, "the timeline says why")
	assert.GreaterOrEqual(t, len(w.Acquires), 2, "capacity back: bought anew")
	require.Empty(t, w.Leaked())
}
