package trainingwf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workflows/internal/jobwf"
)

// A machine still booting costs nothing yet (providers bill from boot) once the job follows
// its machines' states; before, it was counted from the acquisition.
func TestTheMeterSkipsMachinesStillBooting(t *testing.T) {
	start := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	held := []cloud.Instance{{ID: "up", State: cloud.StateRunning, PricePerHour: 1}, {ID: "booting", State: cloud.StatePending, PricePerHour: 2}}
	for _, tc := range []struct {
		fromBoot bool
		want     float64
	}{{false, 3}, {true, 1}} {
		j := &job{held: held, scale: 60, odPrice: map[string]float64{}, meter: jobwf.Meter{Last: start}, meterFromBoot: tc.fromBoot}
		j.accrue(start.Add(time.Minute)) // one simulated hour at 60x
		assert.InDelta(t, tc.want, j.status.CostUSD, 1e-9, "following states: %v", tc.fromBoot)
	}
}

// meterRun runs body as a workflow (so it may sleep and take versions) and returns the cost
// it accrued.
func meterRun(t *testing.T, body func(ctx workflow.Context) (float64, error)) float64 {
	t.Helper()
	env := (&testsuite.WorkflowTestSuite{}).NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(body, workflow.RegisterOptions{Name: "meter"})
	env.ExecuteWorkflow("meter")
	require.NoError(t, env.GetWorkflowError())
	var cost float64
	require.NoError(t, env.GetWorkflowResult(&cost))
	return cost
}

// A describe's price (the one in effect: spot prices move) is what the meter counts from
// then on; what was held before is counted at the price it had.
func TestTheMeterFollowsTheDescribedPrice(t *testing.T) {
	cost := meterRun(t, func(ctx workflow.Context) (float64, error) {
		j := &job{held: []cloud.Instance{{ID: "a", State: cloud.StateRunning, PricePerHour: 1}}, scale: 60,
			odPrice: map[string]float64{}, meter: jobwf.Meter{Last: workflow.Now(ctx)}}
		if err := workflow.Sleep(ctx, time.Minute); err != nil { // one simulated hour at $1
			return 0, err
		}
		j.noteStates(ctx, []cloud.Instance{{ID: "a", State: cloud.StateRunning, PricePerHour: 3}})
		if err := workflow.Sleep(ctx, time.Minute); err != nil { // one at $3
			return 0, err
		}
		j.accrue(workflow.Now(ctx))
		return j.status.CostUSD, nil
	})
	assert.InDelta(t, 4, cost, 1e-9)
}

// A machine the provider says is gone costs nothing from that describe on, though the job still
// holds it while it stops the epoch's other trainers; before, it was counted until dropped.
func TestTheMeterStopsAtAConfirmedLoss(t *testing.T) {
	cost := meterRun(t, func(ctx workflow.Context) (float64, error) {
		j := &job{held: []cloud.Instance{{ID: "a", State: cloud.StateRunning, PricePerHour: 1},
			{ID: "b", State: cloud.StateRunning, PricePerHour: 2}}, scale: 60,
			odPrice: map[string]float64{}, meter: jobwf.Meter{Last: workflow.Now(ctx)}}
		if err := workflow.Sleep(ctx, time.Minute); err != nil { // one simulated hour of both: $3
			return 0, err
		}
		j.noteStates(ctx, []cloud.Instance{{ID: "a", State: cloud.StateRunning}, {ID: "b", State: cloud.StatePreempted}})
		if err := workflow.Sleep(ctx, time.Minute); err != nil { // one of a alone: $1
			return 0, err
		}
		j.accrue(workflow.Now(ctx))
		return j.status.CostUSD, nil
	})
	assert.InDelta(t, 4, cost, 1e-9)
}

// A run skips machines still booting from its start, not from its first describe: the first
// epoch's machines are bought booting, and until that describe they were counted.
func TestTheMeterSkipsBootingMachinesBeforeTheFirstDescribe(t *testing.T) {
	cost := meterRun(t, func(ctx workflow.Context) (float64, error) {
		j := newJob(ctx, training.JobInput{})
		j.scale = 60
		j.held = []cloud.Instance{{ID: "up", State: cloud.StateRunning, PricePerHour: 1},
			{ID: "booting", State: cloud.StatePending, PricePerHour: 2}}
		if err := workflow.Sleep(ctx, time.Minute); err != nil { // one simulated hour
			return 0, err
		}
		j.accrue(workflow.Now(ctx))
		return j.status.CostUSD, nil
	})
	assert.InDelta(t, 1, cost, 1e-9)
}
