package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
)

// A market that runs many jobs holds what is live plus one retention of history: gone
// instances, their client tokens and old events are forgotten, their cost is not.
func TestGoneInstancesArePrunedAfterTheRetention(t *testing.T) {
	zone, typ := "us-east-1a", "p3.2xlarge"
	m := newMarket(t, oneOffering(zone, typ, Constant(1000)))
	var first []string
	spent := 0.0
	for i := range 600 {
		got, err := m.Create(ctx, cloud.CreateRequest{JobID: "job-1", Zone: zone, InstanceType: typ, Capacity: cloud.Spot,
			Count: 1, ClientToken: fmt.Sprintf("tok-%d", i)})
		require.NoError(t, err)
		if i == 0 {
			first = cloud.IDs(got)
		}
		m.Advance(10 * time.Minute)
		c, _ := m.InstanceCost(got[0].ID)
		spent += c
		require.NoError(t, m.Terminate(ctx, cloud.IDs(got)))
	}
	keep := live(m)
	// 600 instances over 100 simulated hours; the last hour's stay describable.
	assert.LessOrEqual(t, keep.instances, 8, "gone instances kept past the retention")
	assert.LessOrEqual(t, keep.tokens, 8, "client tokens of forgotten instances kept")
	assert.Less(t, keep.events, pruneBatch+4*8, "events older than the retention kept")

	d, err := m.Describe(ctx, first)
	require.NoError(t, err)
	assert.Empty(t, d, "an instance gone for 100 hours is still described")
	assert.InDelta(t, spent, m.CostUSD("job-1"), 1e-6, "a forgotten instance's cost is still the job's")
	assert.InDelta(t, spent, m.TotalCost(), 1e-6)

	// Seq numbers go on where they were; a reader far behind gets what is left.
	ev := m.EventsSince(0)
	require.NotEmpty(t, ev)
	assert.Greater(t, ev[0].Seq, int64(1))
	assert.Equal(t, m.LastSeq(), ev[len(ev)-1].Seq)
	assert.Empty(t, m.EventsSince(m.LastSeq()))
	// A retried client token of a forgotten launch is a new launch, as for a token EC2 no
	// longer remembers.
	again, err := m.Create(ctx, cloud.CreateRequest{JobID: "job-1", Zone: zone, InstanceType: typ, Capacity: cloud.Spot,
		Count: 1, ClientToken: "tok-0"})
	require.NoError(t, err)
	assert.NotEqual(t, first, cloud.IDs(again))
}

// Within the retention a gone instance still says what happened to it, which is how a job
// tells a preemption from a termination.
func TestGoneInstancesAreDescribedWithinTheRetention(t *testing.T) {
	zone, typ := "us-east-1a", "p3.2xlarge"
	m := newMarket(t, oneOffering(zone, typ, Constant(1)))
	got, err := m.Create(ctx, spotReq(zone, typ, 1))
	require.NoError(t, err)
	require.NoError(t, m.Terminate(ctx, cloud.IDs(got)))
	m.Advance(DefaultRetention - time.Minute)
	d, err := m.Describe(ctx, cloud.IDs(got))
	require.NoError(t, err)
	require.Len(t, d, 1)
	assert.Equal(t, cloud.StateTerminated, d[0].State)
	m.Advance(2 * time.Minute)
	d, err = m.Describe(ctx, cloud.IDs(got))
	require.NoError(t, err)
	assert.Empty(t, d)
}

type held struct{ instances, tokens, events int }

func live(m *Market) held {
	m.mu.Lock()
	defer m.mu.Unlock()
	return held{instances: len(m.instances), tokens: len(m.tokens), events: len(m.events)}
}
