package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
)

func TestCostPerInstanceSecond(t *testing.T) {
	zone, typ := "us-east-1a", "p3.2xlarge"
	m := newMarket(t, oneOffering(zone, typ, Constant(2)))
	price, _ := m.SpotPrice(zone, typ)
	got, err := m.Create(ctx, spotReq(zone, typ, 1))
	require.NoError(t, err)
	id := got[0].ID
	assert.Equal(t, price, got[0].PricePerHour)

	boot := m.Params("aws").BootTime
	m.Advance(boot)
	cost, ok := m.InstanceCost(id)
	require.True(t, ok)
	assert.Zero(t, cost, "pending time is free")

	m.Advance(90 * time.Second)
	cost, _ = m.InstanceCost(id)
	assert.InDelta(t, price*90/3600, cost, 1e-12)
	assert.InDelta(t, cost, m.CostUSD("job-1"), 1e-12)
	assert.InDelta(t, cost, m.TotalCost(), 1e-12)
	assert.Zero(t, m.CostUSD("other-job"))

	require.NoError(t, m.Terminate(ctx, []string{id}))
	m.Advance(time.Hour)
	after, _ := m.InstanceCost(id)
	assert.InDelta(t, cost, after, 1e-12, "terminate stops billing")

	_, ok = m.InstanceCost("i-nope")
	assert.False(t, ok)
}

func TestMinimumBilledMinute(t *testing.T) {
	zone, typ := "us-central1-a", "g2-standard-4"
	m := newMarket(t, oneOffering(zone, typ, Constant(2)))
	got, err := m.Create(ctx, cloud.CreateRequest{JobID: "j", Zone: zone, InstanceType: typ, Capacity: cloud.OnDemand, Count: 2})
	require.NoError(t, err)
	m.Advance(m.Params("gcp").BootTime + 20*time.Second)
	require.NoError(t, m.Terminate(ctx, cloud.IDs(got[:1])))
	cost, _ := m.InstanceCost(got[0].ID)
	assert.InDelta(t, got[0].PricePerHour*60/3600, cost, 1e-12, "20 s of running is charged as a minute")

	// Terminated while pending: never ran, never charged.
	require.NoError(t, m.Terminate(ctx, cloud.IDs(got[1:])))
	later, err := m.Create(ctx, cloud.CreateRequest{JobID: "j", Zone: zone, InstanceType: typ, Capacity: cloud.OnDemand, Count: 1})
	require.NoError(t, err)
	require.NoError(t, m.Terminate(ctx, cloud.IDs(later)))
	m.Advance(time.Hour)
	cost, _ = m.InstanceCost(later[0].ID)
	assert.Zero(t, cost)
}

func TestPreemptionEndsBilling(t *testing.T) {
	zone, typ := "us-east-1a", "p3.2xlarge"
	cfg := oneOffering(zone, typ, Capacity{Trace: steps(time.Duration(0), 1, time.Hour, 0)})
	cfg.Retention = -1 // the instance is read back four hours after it was preempted
	m := newMarket(t, cfg)
	got, err := m.Create(ctx, spotReq(zone, typ, 1))
	require.NoError(t, err)
	price := got[0].PricePerHour
	m.Advance(5 * time.Hour)
	cost, _ := m.InstanceCost(got[0].ID)
	// Running from 2m (boot) to 1h2m (the drop at 1h plus 2m of notice): one hour billed.
	assert.InDelta(t, price*1, cost, 1e-9)
}

func TestRunningSpotInstancesPayTheDriftingPrice(t *testing.T) {
	zone, typ := "us-west-2a", "p3.2xlarge"
	cfg := oneOffering(zone, typ, Constant(1))
	cfg.Price = PriceModel{} // drift on
	m := newMarket(t, cfg)
	got, err := m.Create(ctx, spotReq(zone, typ, 1))
	require.NoError(t, err)
	m.Advance(m.Params("aws").BootTime)

	lo, hi := got[0].PricePerHour, got[0].PricePerHour
	var prices []float64
	for range 24 * 60 {
		m.Advance(time.Minute)
		p, _ := m.SpotPrice(zone, typ)
		prices = append(prices, p)
		lo, hi = min(lo, p), max(hi, p)
	}
	assert.Greater(t, hi, lo, "the price moved over a day")
	od := 3.06
	assert.GreaterOrEqual(t, lo, 0.2*od-1e-9)
	assert.LessOrEqual(t, hi, 0.6*od+1e-9)

	cost, _ := m.InstanceCost(got[0].ID)
	assert.Greater(t, cost, lo*24)
	assert.Less(t, cost, hi*24)
	assert.NotEqual(t, got[0].PricePerHour*24, cost, "billed at the current price, not the launch price")

	// A describe says the price in effect, which is what the instance pays now.
	now, _ := m.SpotPrice(zone, typ)
	described, err := m.Describe(ctx, []string{got[0].ID})
	require.NoError(t, err)
	require.Len(t, described, 1)
	assert.Equal(t, now, described[0].PricePerHour)
}
