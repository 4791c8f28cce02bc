package servingwf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/serving"
)

// meterRun runs body as a workflow on a fresh deployment state holding held at 60x (so it may
// sleep and take versions) and returns the cost and the on-demand comparison it accrued.
func meterRun(t *testing.T, held []cloud.Instance, body func(ctx workflow.Context, d *dep) error) serving.Status {
	t.Helper()
	env := (&testsuite.WorkflowTestSuite{}).NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context) (serving.Status, error) {
		d := newDep(ctx, serving.DeployInput{})
		d.held, d.scale = append([]cloud.Instance(nil), held...), 60
		if err := body(ctx, d); err != nil {
			return serving.Status{}, err
		}
		d.accrue(workflow.Now(ctx))
		return d.status, nil
	}, workflow.RegisterOptions{Name: "meter"})
	env.ExecuteWorkflow("meter")
	require.NoError(t, env.GetWorkflowError())
	var st serving.Status
	require.NoError(t, env.GetWorkflowResult(&st))
	return st
}

// A machine still booting costs nothing until a describe says it runs (the clouds bill from
// running), and one the provider says is gone costs nothing from that describe on; the
// on-demand comparison counts the same machine-hours.
func TestTheDeploymentsMeterCountsOnlyBilledMachines(t *testing.T) {
	held := []cloud.Instance{{ID: "up", State: cloud.StateRunning, PricePerHour: 1},
		{ID: "booting", State: cloud.StatePending, PricePerHour: 2}}
	st := meterRun(t, held, func(ctx workflow.Context, d *dep) error {
		if err := workflow.Sleep(ctx, time.Minute); err != nil { // one simulated hour of "up": $1
			return err
		}
		d.noteDescribed(ctx, []cloud.Instance{{ID: "up", State: cloud.StateRunning}, {ID: "booting", State: cloud.StateRunning}})
		if err := workflow.Sleep(ctx, time.Minute); err != nil { // one of both: $3
			return err
		}
		d.noteDescribed(ctx, []cloud.Instance{{ID: "up", State: cloud.StatePreempted}, {ID: "booting", State: cloud.StateRunning}})
		return workflow.Sleep(ctx, time.Minute) // one of "booting" alone: $2
	})
	assert.InDelta(t, 6, st.CostUSD, 1e-9)
	assert.InDelta(t, 6, st.OnDemandCostUSD, 1e-9) // no on-demand prices known: each at its own
}

// The describe's price counts from then on, as before the states were followed.
func TestTheDeploymentsMeterTakesTheDescribedPriceFromThen(t *testing.T) {
	st := meterRun(t, []cloud.Instance{{ID: "a", State: cloud.StateRunning, PricePerHour: 1}}, func(ctx workflow.Context, d *dep) error {
		if err := workflow.Sleep(ctx, time.Minute); err != nil {
			return err
		}
		d.noteDescribed(ctx, []cloud.Instance{{ID: "a", State: cloud.StateRunning, PricePerHour: 3}})
		return workflow.Sleep(ctx, time.Minute)
	})
	assert.InDelta(t, 4, st.CostUSD, 1e-9)
}
