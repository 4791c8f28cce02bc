package cloud

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/gpu"
)

func TestMultiRoutesByZoneAndMerges(t *testing.T) {
	ctx := context.Background()
	aws := NewFake("aws", Offering{Provider: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "p3.2xlarge", GPUType: gpu.V100, GPUsPerInstance: 1, SpotPrice: 0.9, OnDemandPrice: 3.06})
	gcp := NewFake("gcp", Offering{Provider: "gcp", Region: "us-central1", Zone: "us-central1-a", InstanceType: "a2-highgpu-2g", GPUType: gpu.A100_40, GPUsPerInstance: 2, SpotPrice: 1.6, OnDemandPrice: 7.3})
	m := &Multi{Providers: []Provider{aws, gcp}}
	assert.Equal(t, "aws+gcp", m.Name())

	offers, err := m.Offerings(ctx, OfferingFilter{})
	require.NoError(t, err)
	require.Len(t, offers, 2)
	assert.Equal(t, "us-central1-a", offers[0].Zone, "cheapest per GPU first (0.80 < 0.90)")

	got, err := m.Create(ctx, CreateRequest{JobID: "j", Zone: "us-central1-a", InstanceType: "a2-highgpu-2g", Capacity: Spot, Count: 1})
	require.NoError(t, err)
	assert.Equal(t, "gcp", got[0].Provider)
	assert.Equal(t, 0, aws.CallCount("Create"))
	_, err = m.Create(ctx, CreateRequest{JobID: "j", Zone: "us-east-1a", InstanceType: "p3.2xlarge", Capacity: Spot, Count: 1})
	require.NoError(t, err)
	_, err = m.Create(ctx, CreateRequest{Zone: "mars-1a", InstanceType: "p3.2xlarge", Capacity: Spot, Count: 1})
	assert.True(t, IsNotFound(err))

	listed, err := m.List(ctx, map[string]string{JobTag: "j"})
	require.NoError(t, err)
	assert.Len(t, listed, 2)

	aws.InjectError("Terminate", errors.New("aws down"))
	err = m.Terminate(ctx, []string{listed[0].ID, listed[1].ID})
	assert.ErrorContains(t, err, "aws down")
	left, err := m.List(ctx, map[string]string{JobTag: "j"})
	require.NoError(t, err)
	require.Len(t, left, 1, "gcp still terminated its instance while aws failed")
	assert.Equal(t, "aws", left[0].Provider)

	gcp.InjectError("Offerings", errors.New("gcp down"))
	_, err = m.Offerings(ctx, OfferingFilter{})
	assert.ErrorContains(t, err, "gcp down")
}
