package aws

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/catalog"
	"github.com/schooner-ml/schooner/cloud/sim/ec2api"
	"github.com/schooner-ml/schooner/gpu"
)

// TestMain hides any AWS configuration of the machine running the tests, so every test goes
// through the "endpoint without credentials" path that `schooner dev` takes.
func TestMain(m *testing.M) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2"} {
		os.Unsetenv(k)
	}
	os.Setenv("AWS_CONFIG_FILE", os.DevNull)
	os.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	os.Exit(m.Run())
}

// testCatalog is a small catalog of its own, so the tests do not depend on the data files.
func testCatalog() *catalog.Catalog {
	return &catalog.Catalog{Types: []catalog.InstanceType{
		{Provider: "aws", Name: "p3.2xlarge", GPUType: gpu.V100, GPUs: 1, VCPUs: 8, MemoryGiB: 61,
			OnDemand: map[string]float64{"us-east-1": 3.06, "us-west-2": 3.06}, SpotDiscount: 0.7,
			Zones: []string{"us-east-1a", "us-east-1b", "us-west-2a"}},
		{Provider: "aws", Name: "p4d.24xlarge", GPUType: gpu.A100_40, GPUs: 8, VCPUs: 96, MemoryGiB: 1152,
			OnDemand: map[string]float64{"us-east-1": 32.77}, SpotDiscount: 0.6,
			Zones: []string{"us-east-1a", "us-east-1c"}},
	}}
}

// testOfferings is what the simulated cloud sells: p3.2xlarge in three zones with live spot
// prices below the catalog's estimate; no p4d at all (so its prices fall back to the catalog).
func testOfferings() []cloud.Offering {
	o := func(region, zone string, spot float64) cloud.Offering {
		return cloud.Offering{Provider: "aws", Region: region, Zone: zone, InstanceType: "p3.2xlarge", GPUType: gpu.V100,
			GPUsPerInstance: 1, SpotPrice: spot, OnDemandPrice: 3.06, SpotCapacity: -1}
	}
	return []cloud.Offering{o("us-east-1", "us-east-1a", 0.95), o("us-east-1", "us-east-1b", 0.91), o("us-west-2", "us-west-2a", 0.99)}
}

// env is the provider under test against the EC2 face over a Fake, on a real listener.
type env struct {
	fake *cloud.Fake
	face *ec2api.Server
	p    *Provider
}

func newEnv(t *testing.T, tune ...func(*Options)) *env {
	t.Helper()
	fake := cloud.NewFake("aws", testOfferings()...)
	face := ec2api.New(fake, ec2api.Options{})
	if err := face.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = face.Close() })
	opts := Options{
		Regions:         []string{"us-east-1", "us-west-2"},
		Endpoint:        face.Addr(),
		Catalog:         testCatalog(),
		RetryMaxBackoff: 5 * time.Millisecond,
	}
	for _, f := range tune {
		f(&opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &env{fake: fake, face: face, p: p}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustCreate creates req's instances through the provider under test and fails the test
// when that errs: for tests whose subject is what happens after the launch.
func (e *env) mustCreate(t *testing.T, ctx context.Context, req cloud.CreateRequest) []cloud.Instance {
	t.Helper()
	insts, err := e.p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return insts
}

func spotReq(job, zone string, n int) cloud.CreateRequest {
	return cloud.CreateRequest{JobID: job, Zone: zone, InstanceType: "p3.2xlarge", Capacity: cloud.Spot, Count: n}
}
