// Package gcetest is what the tests of the Compute face (gceapi) and of its client (cloud/gcp)
// share: a project, two zones, two machine types and a face started for a test.
package gcetest

import (
	"testing"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/sim/gceapi"
)

// The project, zones and machine types the tests use: an A100 machine and a V100 one given as
// a machine type with an accelerator.
const (
	Project = "test-project"
	ZoneA   = "us-central1-a"
	ZoneB   = "us-central1-b"
	A2      = "a2-highgpu-1g"
	N1V100  = "n1-standard-8+nvidia-tesla-v100:1"
)

// Start serves the Compute face of Project over fake on a free local port until the test ends.
func Start(t testing.TB, fake *cloud.Fake) *gceapi.Server {
	t.Helper()
	srv := gceapi.NewServer(fake, gceapi.Options{Project: Project})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}
