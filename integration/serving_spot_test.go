package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/serving"
)

// droughtTraces writes a spot-traces directory of two zones of p3.2xlarge (V100 × 1) with no
// spot capacity for the first `dry` minutes, then room for four instances in each.
func droughtTraces(t *testing.T, dry int) string {
	dir := t.TempDir()
	counts := strings.Repeat("0,", dry) + strings.TrimSuffix(strings.Repeat("4,", 600), ",")
	for _, zone := range []string{"us-east-2b", "us-west-2a"} {
		body := fmt.Sprintf(`{"metadata": {"gap_seconds": 60}, "data": [%s]}`, counts)
		require.NoError(t, os.WriteFile(filepath.Join(dir, zone+"_v100_1.json"), []byte(body), 0o644))
	}
	return dir
}

// A spot-with-fallback deployment that starts in a spot drought serves on on-demand machines,
// then, once the traces give spot room, moves each stage to spot as it migrates after a notice:
// the on-demand machines are released, and requests are served the same before and after.
func TestServingFallsBackToOnDemandAndReturnsToSpot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	spec := serving.Spec{Name: "tiny", Model: serving.Model{Name: "tiny", Seed: 7}, Stages: 2, Spot: fleet.SpotWithFallback,
		Resources:  fleet.Resources{Clouds: []string{"aws"}, Zones: []string{"us-east-2b", "us-west-2a"}, InstanceTypes: []string{"p3.2xlarge"}},
		MaxContext: 512}
	// 12 simulated minutes without spot (36 s at 20×); a look for spot every 2 simulated minutes.
	e := startServingOn(t, ctx, droughtTraces(t, 12), spec, serving.DeployOptions{SpotReturnEvery: 2 * time.Minute})
	st, err := e.sc.Status(ctx, e.id)
	require.NoError(t, err)
	for _, s := range st.Stages {
		assert.Equal(t, cloud.OnDemand, s.Capacity, "stage %d: no spot anywhere at the start", s.Stage)
	}
	const prompt, n = "cheap when it can, up when it must", 48
	ref := e.streamThrough(ctx, prompt, n, -1, nil)
	require.NotEmpty(t, ref)

	eventually(t, 150*time.Second, func() bool {
		st, err = e.sc.Status(ctx, e.id)
		if err != nil || st.SpotReturns < 2 || st.Phase != serving.PhaseServing {
			return false
		}
		for _, s := range st.Stages {
			if s.Capacity != cloud.Spot || s.State != serving.StateReady {
				return false
			}
		}
		return len(st.Instances) == 2
	}, "both stages back on spot and the on-demand machines released")
	assert.Zero(t, st.Failovers, "moving back to spot is not a failover")
	assert.Equal(t, ref, e.streamThrough(ctx, prompt, n, -1, nil), "the same answer on the spot pipeline")

	st, err = e.sc.Stop(ctx, e.id, "test done")
	require.NoError(t, err)
	assert.Equal(t, serving.PhaseStopped, st.Phase)
	assert.Zero(t, st.LeakedInstances)
	recordHistory(t, e.Client, e.id, "serving_deployment_spot_return.json")
}
