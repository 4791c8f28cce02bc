package servingact

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/serving"
)

func TestOfferingsFiltersAndNamesUnknownPlaces(t *testing.T) {
	f := cloud.NewFake("aws",
		cloud.Offering{Provider: "aws", Region: "r1", Zone: "r1-a", InstanceType: "p3", GPUType: "V100-16", GPUsPerInstance: 1, SpotPrice: 1, OnDemandPrice: 3, SpotCapacity: 4},
		cloud.Offering{Provider: "aws", Region: "r1", Zone: "r1-b", InstanceType: "p4", GPUType: "A100-40", GPUsPerInstance: 1, SpotPrice: 2, OnDemandPrice: 5, SpotCapacity: 4})
	c := &Control{Provider: f}
	got, err := c.Offerings(context.Background(), serving.OfferingsRequest{Resources: fleet.Resources{GPUTypes: []string{"V100-16"}}})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "r1-a", got[0].Zone)

	_, err = c.Offerings(context.Background(), serving.OfferingsRequest{Resources: fleet.Resources{Zones: []string{"r9-z"}}})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, serving.ErrTypeInvalidSpec, app.Type())
	assert.True(t, app.NonRetryable())
	assert.Contains(t, err.Error(), "invalid serving spec")
	assert.Contains(t, err.Error(), "resources.zones[0]")
}
