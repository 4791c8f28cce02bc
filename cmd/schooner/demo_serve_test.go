//go:build !agentonly

package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/serving"
)

func TestDemoServeSchedule(t *testing.T) {
	o := loadOptions{Rate: 4, Duration: 60 * time.Second, Seed: 1, MinTokens: 32, MaxTokens: 128}
	require.NoError(t, o.check())
	a, b := o.schedule(), o.schedule()
	assert.Equal(t, a, b, "the same seed gives the same schedule")
	assert.InDelta(t, 240, len(a), 60, "about rate × duration requests")
	hot := 0
	for i, r := range a {
		assert.Equal(t, i, r.Index)
		assert.Less(t, r.Due, o.Duration)
		if i > 0 {
			assert.GreaterOrEqual(t, r.Due, a[i-1].Due)
		}
		assert.GreaterOrEqual(t, r.MaxTokens, 32)
		assert.LessOrEqual(t, r.MaxTokens, 128)
		assert.Less(t, r.Prompt, len(demoPrompts))
		if r.Temperature > 0 {
			hot++
		}
	}
	assert.InDelta(t, len(a)/2, hot, float64(len(a))/4, "about half sampled at temperature > 0")
	o.Seed = 2
	assert.NotEqual(t, a, o.schedule())
	assert.Error(t, loadOptions{Rate: 0, Duration: time.Second, MinTokens: 1, MaxTokens: 1}.check())
	assert.Error(t, loadOptions{Rate: 1, Duration: time.Second, MinTokens: 9, MaxTokens: 8}.check())
}

func TestDefaultServeFaults(t *testing.T) {
	f := defaultServeFaults(2)
	require.Len(t, f, 2)
	assert.Equal(t, faultPlan{At: 0.25, Stage: 1}, f[0], "the last stage dies without notice first")
	assert.Equal(t, faultPlan{At: 0.60, Stage: 0, Notice: true}, f[1])
}

func TestServePoliciesShapeTheDeployment(t *testing.T) {
	base := serving.Spec{Spot: fleet.SpotWithFallback, KVReplication: serving.ReplicationOn}
	spec, o := base, serving.DeployOptions{}
	applyServePolicy(policySpotAware, &spec, &o)
	assert.Equal(t, base, spec, "spot-aware leaves the spec as it is")
	assert.Equal(t, serving.DeployOptions{}, o)

	applyServePolicy(policyRestartOnly, &spec, &o)
	assert.Equal(t, fleet.SpotOnly, spec.Spot)
	assert.Equal(t, serving.ReplicationOff, spec.KVReplication)
	assert.True(t, o.IgnoreNotices)
	assert.Negative(t, o.SpotReturnEvery)

	spec = base
	applyServePolicy(policyOnDemand, &spec, &o)
	assert.Equal(t, fleet.OnDemandOnly, spec.Spot)

	f := &demoServeFlags{policy: "cheap", refConcurrency: 1, load: loadOptions{Rate: 1, Duration: time.Second, MinTokens: 1, MaxTokens: 1}}
	f.stack.TimeScale, f.timeout = 20, time.Minute
	assert.ErrorContains(t, f.check(), `invalid --policy "cheap"`)
}
