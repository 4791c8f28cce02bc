package fleetact

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/activities/internal/acttest"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
)

func TestOfferingsKeepToTheSpecsInstanceTypes(t *testing.T) {
	p := cloud.NewFake("fake", acttest.Offers()...)
	got, err := Offerings(context.Background(), p, fleet.Resources{InstanceTypes: []string{"v1"}}, "training")
	require.NoError(t, err)
	require.NotEmpty(t, got)
	for _, o := range got {
		assert.Equal(t, "v1", o.InstanceType)
	}
	_, err = Offerings(context.Background(), p, fleet.Resources{InstanceTypes: []string{"p5.48xlarge"}}, "training")
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	assert.Equal(t, ErrTypeInvalidSpec, app.Type())
	assert.Contains(t, err.Error(), `resources.instance_types[0]`)
	assert.Contains(t, err.Error(), `"p5.48xlarge" is not offered`)
}

func TestResourcesRefuseAnEmptyInstanceType(t *testing.T) {
	var problems []string
	fleet.Resources{InstanceTypes: []string{" "}}.Check(func(field, problem string) { problems = append(problems, field+": "+problem) })
	assert.Equal(t, []string{"resources.instance_types[0]: must not be empty"}, problems)
}
