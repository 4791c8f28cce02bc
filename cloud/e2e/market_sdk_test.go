package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/aws"
	"github.com/schooner-ml/schooner/cloud/gcp"
	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/cloud/sim/ec2api"
	"github.com/schooner-ml/schooner/cloud/sim/gceapi"
)

// rig is a market whose clock only moves when the test says so, its two faces, and the real
// SDK-backed providers pointed at them.
type rig struct {
	market *sim.Market
	ec2    *ec2api.Server
	gce    *gceapi.Server
	aws    *aws.Provider
	gcp    *gcp.Provider
}

func trace(t *testing.T, gap int, counts string) *sim.Trace {
	t.Helper()
	tr, err := sim.ParseTrace([]byte(`{"metadata":{"gap_seconds":` + strconv.Itoa(gap) + `},"data":[` + counts + `]}`))
	require.NoError(t, err)
	return tr
}

func newRig(t *testing.T, capacity map[sim.Key]sim.Capacity) *rig {
	t.Helper()
	m, err := sim.New(sim.Config{Seed: 7, Capacity: capacity, Price: sim.PriceModel{Fixed: true}})
	require.NoError(t, err)
	r := &rig{market: m}
	r.ec2 = ec2api.New(m, ec2api.Options{Now: m.Now})
	require.NoError(t, r.ec2.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = r.ec2.Close() })
	r.gce = gceapi.NewServer(m, gceapi.Options{Project: "p", Now: m.Now})
	require.NoError(t, r.gce.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = r.gce.Close() })
	ctx := context.Background()
	r.aws, err = aws.New(ctx, aws.Options{Regions: []string{"us-west-2", "us-east-2"}, Endpoint: r.ec2.Addr(), Now: m.Now})
	require.NoError(t, err)
	r.gcp, err = gcp.New(ctx, gcp.Options{Project: "p", Zones: []string{"us-central1-a", "us-central1-b"}, Endpoint: r.gce.URL(), Now: m.Now, PollInterval: time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.gcp.Close() })
	return r
}

// TestAWSSpotPreemptionFollowsTrace: the trace allows 2 instances, then 1; the SDK sees the
// notice through instance metadata two minutes before DescribeInstances shows the
// preemption, and ConfirmLost agrees only after the deadline.
func TestAWSSpotPreemptionFollowsTrace(t *testing.T) {
	ctx := context.Background()
	key := sim.Key{Zone: "us-west-2a", InstanceType: "p3.2xlarge"}
	r := newRig(t, map[sim.Key]sim.Capacity{key: {Trace: trace(t, 600, "2,2,1,1")}})

	offers, err := r.aws.Offerings(ctx, cloud.OfferingFilter{Zones: []string{"us-west-2a"}, InstanceTypes: []string{"p3.2xlarge"}})
	require.NoError(t, err)
	require.Len(t, offers, 1)
	assert.Greater(t, offers[0].SpotPrice, 0.0)
	assert.Less(t, offers[0].SpotPrice, offers[0].OnDemandPrice)

	got, err := r.aws.Create(ctx, cloud.CreateRequest{JobID: "job-a", Zone: "us-west-2a", InstanceType: "p3.2xlarge", Capacity: cloud.Spot, Count: 3})
	require.Len(t, got, 2, "the trace allows two")
	require.True(t, cloud.IsInsufficientCapacity(err), "the third is refused with a capacity error: %v", err)
	e, ok := cloud.AsError(err)
	require.True(t, ok)
	assert.Equal(t, "InsufficientInstanceCapacity", e.Code)

	r.market.Advance(5 * time.Minute) // boot
	for _, inst := range got {
		v, _, err := cloud.ConfirmLost(ctx, r.aws, inst.ID)
		require.NoError(t, err)
		assert.Equal(t, cloud.VerdictAlive, v)
	}
	newest := got[1].ID
	w, err := aws.NewWatcher(aws.WatcherOptions{Endpoint: r.ec2.IMDSEndpoint(newest), Now: r.market.Now})
	require.NoError(t, err)
	intr, err := w.Poll(ctx)
	require.NoError(t, err)
	assert.Nil(t, intr, "no notice before the trace falls")

	start := r.market.Now()
	r.market.AdvanceTo(sim.DefaultStart.Add(20*time.Minute + time.Second)) // tick 2: capacity 1
	intr, err = w.Poll(ctx)
	require.NoError(t, err)
	require.NotNil(t, intr, "the notice reaches the instance's metadata")
	assert.Equal(t, cloud.Notice, intr.Kind)
	assert.Equal(t, sim.DefaultStart.Add(20*time.Minute+2*time.Minute), intr.Deadline.UTC(), "AWS gives two minutes")
	v, _, err := cloud.ConfirmLost(ctx, r.aws, newest)
	require.NoError(t, err)
	assert.False(t, v.Lost(), "a notice is not yet a loss (verdict %s)", v)
	assert.True(t, r.market.Now().After(start))

	r.market.Advance(2 * time.Minute)
	v, inst, err := cloud.ConfirmLost(ctx, r.aws, newest)
	require.NoError(t, err)
	assert.Equal(t, cloud.VerdictPreempted, v)
	assert.Equal(t, cloud.StatePreempted, inst.State)
	v, _, err = cloud.ConfirmLost(ctx, r.aws, got[0].ID)
	require.NoError(t, err)
	assert.Equal(t, cloud.VerdictAlive, v, "only the surplus instance is preempted")
	assert.Greater(t, r.market.CostUSD("job-a"), 0.0)
}

// TestGCPStockoutAndPreemption: a zone with room for one VM refuses the second with
// ZONE_RESOURCE_POOL_EXHAUSTED; when capacity goes the metadata server says so and zone
// operations record compute.instances.preempted.
func TestGCPStockoutAndPreemption(t *testing.T) {
	ctx := context.Background()
	key := sim.Key{Zone: "us-central1-a", InstanceType: "a2-highgpu-1g"}
	r := newRig(t, map[sim.Key]sim.Capacity{key: {Trace: trace(t, 600, "1,1,0")}})

	got, err := r.gcp.Create(ctx, cloud.CreateRequest{JobID: "job-g", Zone: "us-central1-a", InstanceType: "a2-highgpu-1g", Capacity: cloud.Spot, Count: 1})
	require.NoError(t, err)
	require.Len(t, got, 1)
	_, err = r.gcp.Create(ctx, cloud.CreateRequest{JobID: "job-g", Zone: "us-central1-a", InstanceType: "a2-highgpu-1g", Capacity: cloud.Spot, Count: 1})
	require.True(t, cloud.IsInsufficientCapacity(err), "%v", err)
	e, _ := cloud.AsError(err)
	assert.Contains(t, e.Code, "ZONE_RESOURCE_POOL_EXHAUSTED")
	require.NotNil(t, e.Offering)
	assert.Equal(t, key.Zone, e.Offering.Zone)

	cache := &cloud.Unavailable{Now: r.market.Now}
	assert.True(t, cache.Observe(cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: key.InstanceType, Zone: key.Zone}, err))

	id := got[0].ID
	w, err := gcp.NewWatcher(gcp.WatcherOptions{MetadataURL: r.gce.MetadataURL(id), Now: r.market.Now})
	require.NoError(t, err)
	r.market.Advance(3 * time.Minute)
	intr, err := w.Poll(ctx)
	require.NoError(t, err)
	assert.Nil(t, intr)

	r.market.AdvanceTo(sim.DefaultStart.Add(20*time.Minute + time.Second))
	intr, err = w.Poll(ctx)
	require.NoError(t, err)
	require.NotNil(t, intr)
	assert.Equal(t, cloud.Notice, intr.Kind)

	r.market.Advance(31 * time.Second) // GCP gives about 30 s
	v, _, err := cloud.ConfirmLost(ctx, r.gcp, id)
	require.NoError(t, err)
	assert.Equal(t, cloud.VerdictPreempted, v)
}

// TestLeakListingAndCleanupAcrossClouds: instances of one job on both clouds are found by
// their job tag through both SDKs and terminated, and the market stops billing them.
func TestLeakListingAndCleanupAcrossClouds(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, map[sim.Key]sim.Capacity{
		{Zone: "us-west-2a", InstanceType: "p3.2xlarge"}:       sim.Constant(4),
		{Zone: "us-central1-b", InstanceType: "g2-standard-4"}: sim.Constant(4),
	})
	both := &cloud.Multi{Providers: []cloud.Provider{r.aws, r.gcp}}
	_, err := both.Create(ctx, cloud.CreateRequest{JobID: "leaky", Zone: "us-west-2a", InstanceType: "p3.2xlarge", Capacity: cloud.Spot, Count: 2})
	require.NoError(t, err)
	_, err = both.Create(ctx, cloud.CreateRequest{JobID: "leaky", Zone: "us-central1-b", InstanceType: "g2-standard-4", Capacity: cloud.OnDemand, Count: 1})
	require.NoError(t, err)
	_, err = both.Create(ctx, cloud.CreateRequest{JobID: "other", Zone: "us-west-2a", InstanceType: "p3.2xlarge", Capacity: cloud.Spot, Count: 1})
	require.NoError(t, err)

	leaked, err := both.List(ctx, map[string]string{cloud.JobTag: "leaky"})
	require.NoError(t, err)
	require.Len(t, leaked, 3)
	require.NoError(t, both.Terminate(ctx, cloud.IDs(leaked)))
	r.market.Advance(time.Minute)
	left, err := both.List(ctx, map[string]string{cloud.JobTag: "leaky"})
	require.NoError(t, err)
	assert.Empty(t, left)
	others, err := both.List(ctx, map[string]string{cloud.JobTag: "other"})
	require.NoError(t, err)
	assert.Len(t, others, 1, "cleanup of one job never touches another")

	cost := r.market.CostUSD("leaky")
	r.market.Advance(time.Hour)
	assert.Equal(t, cost, r.market.CostUSD("leaky"), "terminated instances stop costing")
}
