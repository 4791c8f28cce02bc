package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/planner/profiles"
)

// A job the deadline policy moved onto on-demand GPUs keeps on-demand GPUs while spot alone
// cannot keep the deadline (none on offer, or too little), and drops them for spot alone once
// a spot placement that keeps the deadline is on offer again: on-demand progress costs three
// times spot progress.
func TestDecideRunningReturnsToSpotOnceSpotKeepsTheDeadline(t *testing.T) {
	models, net, err := profiles.Bundled()
	require.NoError(t, err)
	m := models["OPT-350"]
	// 4000 iterations to go in 6 hours, on 4 on-demand GPUs.
	r := Running{Iterations: 6000, MaxGPUs: 8, Elapsed: 8 * time.Hour, Deadline: 14 * time.Hour, Every: 5 * time.Minute,
		Done: 2000, Checkpointed: 2000, OnDemand: Placement{"us-east-2b": 4}}
	mem := DeadlineMemory{}
	for _, c := range []struct {
		free map[string]int
		what string
	}{{nil, "no spot on offer"}, {map[string]int{"us-west-2a": 1}, "one spot GPU, too few to keep the deadline"}} {
		d, err := DecideRunning(r, v100Offers(c.free), mem, m, net, 32)
		require.NoError(t, err)
		assert.Positive(t, d.Request.OnDemand, "%s: on-demand GPUs stay (%+v)", c.what, d.Request)
		assert.NotEmpty(t, d.Request.Why, c.what)
		mem = d.Memory
	}

	back, err := DecideRunning(r, v100Offers(map[string]int{"us-east-2b": 8, "us-west-2a": 8, "us-west-2c": 8}), mem, m, net, 32)
	require.NoError(t, err)
	assert.Zero(t, back.Request.OnDemand, "spot that keeps the deadline is on offer again: back to spot alone (%+v)", back.Request)
	assert.Zero(t, back.OnDemand.GPUs())
	assert.Positive(t, back.Request.Spot)
	assert.Equal(t, back.Request.Spot, back.Spot.GPUs())
	assert.False(t, back.Memory.Critical, "the safety net did not fire")
}
