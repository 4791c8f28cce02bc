package trainingact

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/activities/internal/acttest"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
)

// errType is the application error type of err ("" when it is none).
func errType(err error) (string, bool) {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) {
		return "", false
	}
	return app.Type(), app.NonRetryable()
}

func TestAJobNoCapacityCouldEverFitFailsAtOnce(t *testing.T) {
	v100 := acttest.Offers()[2:] // one V100-16 offering: OPT-350 needs two of them
	require.Equal(t, "V100-16", string(v100[0].GPUType))
	tr := &Control{}
	req := training.PlanJobRequest{Model: training.Model{Name: "OPT-350"}, GlobalBatch: 32, MaxGPUs: 1, Offers: v100}
	_, err := tr.PlanJob(context.Background(), req)
	typ, final := errType(err)
	assert.Equal(t, training.ErrTypeInfeasible, typ, "%v", err)
	assert.True(t, final)
	assert.ErrorContains(t, err, "raise resources.max_gpus")

	// The same job allowed two GPUs while only one is free: a plan would fit
	// once capacity returns, so it is an ordinary NoPlan and the job waits.
	dry := append([]cloud.Offering(nil), v100...)
	dry[0].SpotCapacity = 1
	req.MaxGPUs, req.Offers = 2, dry
	_, err = tr.PlanJob(context.Background(), req)
	typ, _ = errType(err)
	assert.Equal(t, training.ErrTypeNoPlan, typ, "%v", err)
}

// A round whose usable offers are only shapes larger than max_gpus (the fitting ones short
// or in a zone that just preempted) is a drought, not a verdict: the check says nothing when
// it can try no offering, and it tries every offering the spec allows (AllOffers).
func TestADroughtOfTheFittingShapesIsNotInfeasible(t *testing.T) {
	big := []cloud.Offering{{Provider: "fake", Region: "r2", Zone: "r2-a", InstanceType: "v4", GPUType: "V100-16",
		GPUsPerInstance: 4, SpotPrice: 2, OnDemandPrice: 12, SpotCapacity: 0}}
	tr := &Control{}
	held := []cloud.Instance{{ID: "i-1", Provider: "fake", Region: "r2", Zone: "r2-a", InstanceType: "v1", GPUType: "V100-16",
		GPUs: 1, Capacity: cloud.Spot, State: cloud.StateRunning, PricePerHour: 0.5}}
	req := training.PlanJobRequest{Model: training.Model{Name: "OPT-350"}, GlobalBatch: 32, MaxGPUs: 2, Survivors: held, Offers: big}
	_, err := tr.PlanJob(context.Background(), req)
	typ, _ := errType(err)
	assert.Equal(t, training.ErrTypeNoPlan, typ, "one GPU held, only a shape above max_gpus on offer: %v", err)

	req.AllOffers = append(append([]cloud.Offering(nil), big...), acttest.Offers()...)
	_, err = tr.PlanJob(context.Background(), req)
	typ, _ = errType(err)
	assert.Equal(t, training.ErrTypeNoPlan, typ, "the short 1-GPU offerings would fit: %v", err)
}
