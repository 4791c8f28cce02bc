package trainingact

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/activities/internal/acttest"
	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/training"
)

func TestJobOfferingsFiltersBySpec(t *testing.T) {
	tr := &Control{Provider: cloud.NewFake("fake", acttest.Offers()...)}
	got, err := tr.JobOfferings(context.Background(), training.JobOfferingsRequest{Resources: training.Resources{GPUTypes: []string{"A100-40"}, Zones: []string{"r1-b"}}})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "r1-b", got[0].Zone)
	got, err = tr.JobOfferings(context.Background(), training.JobOfferingsRequest{Resources: training.Resources{Clouds: []string{"aws"}}})
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestPlanJobPlansAndPlaces(t *testing.T) {
	tr := &Control{}
	req := training.PlanJobRequest{Model: training.Model{Name: "OPT-350"}, GlobalBatch: 64, Offers: acttest.Offers()}
	res, err := tr.PlanJob(context.Background(), req)
	require.NoError(t, err)
	require.NotEmpty(t, res.Replicas)
	assert.Equal(t, res.Plan.GPUs(), func() int {
		n := 0
		for _, r := range res.Replicas {
			n += r.GPUs
		}
		return n
	}())
	assert.Greater(t, res.ModelLayers, 20)
	for _, r := range res.Replicas {
		assert.Equal(t, cloud.Spot, r.Key.Capacity)
	}

	// A cap the fastest plan exceeds takes a smaller plan under the cap, not an error.
	capped := req
	capped.USDPerHourCap = res.Estimate.USDPerHour / 2
	small, err := tr.PlanJob(context.Background(), capped)
	require.NoError(t, err, "a $/h cap rules out the largest plans, not the job")
	assert.LessOrEqual(t, small.Estimate.USDPerHour, capped.USDPerHourCap+1e-9)
	assert.Less(t, small.Plan.GPUs(), res.Plan.GPUs())

	// A cap below any plan's price is a clear non-retryable error.
	req.USDPerHourCap = 0.01
	_, err = tr.PlanJob(context.Background(), req)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app))
	assert.Equal(t, training.ErrTypeOverBudget, app.Type())
	assert.True(t, app.NonRetryable())

	// Nothing on offer.
	_, err = tr.PlanJob(context.Background(), training.PlanJobRequest{Model: training.Model{Name: "OPT-350"}, GlobalBatch: 64})
	require.True(t, errors.As(err, &app))
	assert.Equal(t, training.ErrTypeNoPlan, app.Type())
}

func TestPlanJobKeepsSurvivors(t *testing.T) {
	tr := &Control{}
	surv := []cloud.Instance{{ID: "s1", Provider: "fake", Region: "r1", Zone: "r1-b", InstanceType: "p4", GPUType: "A100-40", GPUs: 1,
		Capacity: cloud.Spot, PricePerHour: 1.1}}
	res, err := tr.PlanJob(context.Background(), training.PlanJobRequest{Model: training.Model{Name: "OPT-350"}, GlobalBatch: 64,
		Survivors: surv, Offers: acttest.Offers()[:1], MaxGPUs: 4})
	require.NoError(t, err)
	assert.LessOrEqual(t, res.Plan.GPUs(), 4)
	kept := false
	for _, r := range res.Replicas {
		kept = kept || r.Key.Zone == "r1-b"
	}
	assert.True(t, kept, "the replan uses the surviving instance")
}

func TestLatestDurableCheckpointReadsStore(t *testing.T) {
	fs := store.NewFake()
	tr := &Control{OpenStore: func(context.Context, string) (store.Store, error) { return fs, nil }}
	url := "file://" + t.TempDir()
	step, err := tr.LatestDurableCheckpoint(context.Background(), url)
	require.NoError(t, err)
	assert.Equal(t, int64(-1), step)
	fs.Set("step-000000000010/COMMIT", []byte("{}"))
	fs.Set("step-000000000020/rank-00000.data", []byte("x"))
	step, err = tr.LatestDurableCheckpoint(context.Background(), url)
	require.NoError(t, err)
	assert.Equal(t, int64(10), step, "an incomplete step is not durable")
}

func TestVerifyTrainedStateMismatchIsFinal(t *testing.T) {
	fs := store.NewFake()
	tr := &Control{OpenStore: func(context.Context, string) (store.Store, error) { return fs, nil },
		Verify: func(context.Context, *checkpoint.Remote, int64, int64, int) error {
			return errors.New("tensor layer3.w differs")
		}}
	err := tr.VerifyTrainedState(context.Background(), training.VerifyStateRequest{Store: "file://" + t.TempDir(), Step: 10})
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app))
	assert.True(t, app.NonRetryable())
	assert.Contains(t, err.Error(), "layer3.w")
}

// The demo's job without a GPU cap (max_gpus: 0, "no cap") on the demo's market: the fastest
// plans all cost more than its $40/h budget, and the job must still get the fastest plan under
// it instead of failing over budget.
func TestPlanJobFindsThePlanUnderTheCapWithoutAGPUCap(t *testing.T) {
	m, err := sim.New(sim.Config{Seed: 1})
	require.NoError(t, err)
	tr := &Control{Provider: m}
	offers, err := tr.JobOfferings(context.Background(), training.JobOfferingsRequest{Resources: training.Resources{
		Clouds: []string{"aws"}, Zones: []string{"us-east-2b", "us-west-2a", "us-west-2c"}, GPUTypes: []string{"V100-16"}}})
	require.NoError(t, err)
	require.NotEmpty(t, offers)
	req := training.PlanJobRequest{Model: training.Model{Name: "OPT-350"}, GlobalBatch: 32, Objective: training.ObjectiveThroughput,
		USDPerHourCap: 40, MaxGPUs: training.DefaultLimits.MaxGPUs, Offers: offers, OnDemand: true}
	res, err := tr.PlanJob(context.Background(), req)
	require.NoError(t, err)
	assert.LessOrEqual(t, res.Estimate.USDPerHour, 40.0)
}

func TestJobOfferingsNamesZonesRegionsAndGPUsNobodyOffers(t *testing.T) {
	tr := &Control{Provider: cloud.NewFake("fake", acttest.Offers()...)}
	_, err := tr.JobOfferings(context.Background(), training.JobOfferingsRequest{Resources: training.Resources{
		Zones: []string{"r1-a", "mars-1a"}, Regions: []string{"r9"}, GPUTypes: []string{"H200"}}})
	require.Error(t, err)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, training.ErrTypeInvalidSpec, app.Type())
	assert.True(t, app.NonRetryable())
	for _, want := range []string{`resources.zones[1]: "mars-1a"`, `resources.regions[0]: "r9"`, `resources.gpu_types[0]: "H200"`, "offered: r1-a, r1-b, r2-a"} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestLatestDurableCheckpointRefusesAnotherJobsNamespace(t *testing.T) {
	stores := map[string]*store.Fake{}
	tr := &Control{OpenStore: func(_ context.Context, url string) (store.Store, error) {
		if stores[url] == nil {
			stores[url] = store.NewFake()
		}
		return stores[url], nil
	}}
	ctx := context.Background()
	root := "file://" + t.TempDir()
	mine := root + "/jobs/train-a/run-1"
	step, err := tr.LatestDurableCheckpoint(ctx, mine)
	require.NoError(t, err)
	assert.Equal(t, int64(-1), step)
	stores[mine].Set("step-000000000010/COMMIT", []byte("{}"))
	step, err = tr.LatestDurableCheckpoint(ctx, mine)
	require.NoError(t, err, "the namespace the job claimed is its own")
	assert.Equal(t, int64(10), step)

	// Another job's namespace copied (owner record and all) under this job's URL.
	copied := root + "/jobs/train-b/run-7"
	stores[copied] = stores[mine]
	_, err = tr.LatestDurableCheckpoint(ctx, copied)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, training.ErrTypeForeignCheckpoints, app.Type())
	assert.True(t, app.NonRetryable())
	assert.Contains(t, err.Error(), "belongs to job train-a run run-1")

	// Steps without an owner record are not adopted either.
	orphan := root + "/jobs/train-c/run-1"
	stores[orphan] = store.NewFake()
	stores[orphan].Set("step-000000000010/COMMIT", []byte("{}"))
	_, err = tr.LatestDurableCheckpoint(ctx, orphan)
	require.ErrorAs(t, err, &app)
	assert.Contains(t, err.Error(), "no owner record")
}

func TestCheckpointStoresOutsideTheAllowedRootsAreRefused(t *testing.T) {
	opened := false
	tr := &Control{StoreRoots: []string{t.TempDir()}, OpenStore: func(context.Context, string) (store.Store, error) {
		opened = true
		return store.NewFake(), nil
	}}
	for _, url := range []string{"file:///etc", "file://" + tr.StoreRoots[0] + "/../../etc"} {
		_, err := tr.LatestDurableCheckpoint(context.Background(), url)
		var app *temporal.ApplicationError
		require.ErrorAs(t, err, &app, url)
		assert.Equal(t, training.ErrTypeInvalidSpec, app.Type())
		assert.True(t, app.NonRetryable())
		assert.Contains(t, err.Error(), "/etc")
	}
	assert.False(t, opened, "nothing outside the roots is opened, let alone written")
}

// A 1-GPU survivor under max_gpus 8 must not crowd an 8-GPU machine out of every plan: the
// job plans on the offers alone too and takes the clearly better plan.
func TestPlanJobSurvivorDoesNotCrowdOutALargerMachine(t *testing.T) {
	tr := &Control{}
	surv := []cloud.Instance{{ID: "s1", Provider: "fake", Region: "r2", Zone: "r2-a", InstanceType: "v1", GPUType: "V100-16", GPUs: 1,
		Capacity: cloud.Spot, PricePerHour: 0.5}}
	eight := []cloud.Offering{{Provider: "fake", Region: "r1", Zone: "r1-a", InstanceType: "p4x8", GPUType: "A100-40", GPUsPerInstance: 8,
		SpotPrice: 8, OnDemandPrice: 32, SpotCapacity: 1}}
	res, err := tr.PlanJob(context.Background(), training.PlanJobRequest{Model: training.Model{Name: "OPT-350"}, GlobalBatch: 64,
		Survivors: surv, Offers: eight, MaxGPUs: 8})
	require.NoError(t, err)
	assert.Equal(t, 8, res.Plan.GPUs(), "the 8-GPU machine, not the lone survivor")
	for _, r := range res.Replicas {
		assert.Equal(t, "r1-a", r.Key.Zone)
	}
}
