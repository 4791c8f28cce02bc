package sim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/catalog"
	"github.com/schooner-ml/schooner/gpu"
)

func TestDefaultMarketSimulatesTheWholeCatalog(t *testing.T) {
	m := newMarket(t, Config{Seed: 7})
	assert.Equal(t, "sim", m.Name())
	assert.Equal(t, DefaultStart, m.Now())
	offers, err := m.Offerings(ctx, cloud.OfferingFilter{})
	require.NoError(t, err)
	c := catalog.Default()
	assert.Len(t, offers, len(c.Offerings("aws"))+len(c.Offerings("gcp")))
	for i, o := range offers {
		assert.GreaterOrEqual(t, o.SpotCapacity, 0)
		assert.GreaterOrEqual(t, o.SpotPrice, 0.2*o.OnDemandPrice-1e-9, o.InstanceType)
		assert.LessOrEqual(t, o.SpotPrice, 0.6*o.OnDemandPrice+1e-9, o.InstanceType)
		if i > 0 {
			prev := offers[i-1]
			assert.True(t, prev.Zone < o.Zone || (prev.Zone == o.Zone && prev.InstanceType < o.InstanceType))
		}
	}
	assert.Equal(t, time.Minute, m.Params("gcp").BootTime)
	assert.Equal(t, 2*time.Minute, m.Params("aws").NoticePeriod)
}

func TestOfferingsFilterAndCapacityHint(t *testing.T) {
	m := newMarket(t, Config{Seed: 1, Providers: []string{"aws"}, Zones: []string{"us-east-1a", "us-east-1b"},
		Capacity: map[Key]Capacity{{Zone: "us-east-1a", InstanceType: "g5.xlarge"}: Constant(5)}})
	offers, err := m.Offerings(ctx, cloud.OfferingFilter{Zones: []string{"us-east-1a"}, GPUTypes: []gpu.Type{gpu.A10G}})
	require.NoError(t, err)
	require.NotEmpty(t, offers)
	for _, o := range offers {
		assert.Equal(t, "us-east-1a", o.Zone)
		assert.Equal(t, gpu.A10G, o.GPUType)
		assert.Equal(t, "aws", o.Provider)
	}
	_, err = m.Create(ctx, spotReq("us-east-1a", "g5.xlarge", 2))
	require.NoError(t, err)
	offers, _ = m.Offerings(ctx, cloud.OfferingFilter{InstanceTypes: []string{"g5.xlarge"}, Zones: []string{"us-east-1a"}})
	require.Len(t, offers, 1)
	assert.Equal(t, 3, offers[0].SpotCapacity)
	level, free, ok := m.SpotCapacity("us-east-1a", "g5.xlarge")
	assert.True(t, ok)
	assert.Equal(t, 5, level)
	assert.Equal(t, 3, free)

	none, err := m.Offerings(ctx, cloud.OfferingFilter{Zones: []string{"us-central1-a"}})
	require.NoError(t, err)
	assert.Empty(t, none, "gcp is not simulated here")
}

func TestCreateRejectsBadInput(t *testing.T) {
	m := newMarket(t, Config{Seed: 1})
	for _, tc := range []struct {
		name string
		req  cloud.CreateRequest
		kind error
		code string
	}{
		{"unknown zone", spotReq("us-east-9z", "p3.2xlarge", 1), cloud.ErrNotFound, CodeUnknownZone},
		{"unknown type", spotReq("us-east-1a", "p9.huge", 1), cloud.ErrNotFound, CodeUnknownInstanceType},
		{"type of another cloud", spotReq("us-east-1a", "a2-highgpu-1g", 1), cloud.ErrNotFound, CodeUnsupported},
		{"type not in zone", spotReq("us-east-1a", "p4de.24xlarge", 1), cloud.ErrNotFound, CodeUnsupported},
		{"zero count", spotReq("us-east-1a", "p3.2xlarge", 0), cloud.ErrInvalidRequest, CodeInvalidParameter},
		{"negative count", spotReq("us-east-1a", "p3.2xlarge", -3), cloud.ErrInvalidRequest, CodeInvalidParameter},
		{"bad capacity type", cloud.CreateRequest{Zone: "us-east-1a", InstanceType: "p3.2xlarge", Capacity: "reserved", Count: 1},
			cloud.ErrInvalidRequest, CodeInvalidParameter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.Create(ctx, tc.req)
			assert.Nil(t, got)
			require.ErrorIs(t, err, tc.kind)
			e, ok := cloud.AsError(err)
			require.True(t, ok)
			assert.Equal(t, tc.code, e.Code)
			assert.NotEmpty(t, e.Message)
		})
	}
	assert.Empty(t, m.EventsSince(0), "rejected requests create nothing")
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		kind error
	}{
		{"unknown zone", Config{Zones: []string{"mars-1a"}}, cloud.ErrNotFound},
		{"unknown type", Config{InstanceTypes: []string{"p9.huge"}}, cloud.ErrNotFound},
		{"unknown provider", Config{Providers: []string{"azure"}}, cloud.ErrNotFound},
		{"capacity for an unknown offering", Config{Capacity: map[Key]Capacity{{Zone: "us-east-1a", InstanceType: "g2-standard-4"}: Constant(1)}},
			cloud.ErrNotFound},
		{"negative on-demand limit", Config{OnDemandLimit: map[Key]int{{Zone: "us-east-1a", InstanceType: "p3.2xlarge"}: -1}},
			cloud.ErrInvalidRequest},
		{"trace with a negative count", Config{Capacity: map[Key]Capacity{{Zone: "us-east-1a", InstanceType: "p3.2xlarge"}: {
			Trace: steps(time.Duration(0), 2, time.Minute, -1)}}}, cloud.ErrInvalidRequest},
		{"trace going back in time", Config{Capacity: map[Key]Capacity{{Zone: "us-east-1a", InstanceType: "p3.2xlarge"}: {
			Trace: steps(time.Minute, 2, time.Duration(0), 1)}}}, cloud.ErrInvalidRequest},
		{"bad on/off model", Config{Capacity: map[Key]Capacity{{Zone: "us-east-1a", InstanceType: "p3.2xlarge"}: {
			OnOff: &OnOff{MeanUp: time.Hour, Level: 2}}}}, cloud.ErrInvalidRequest},
		{"bad price band", Config{Price: PriceModel{Low: 0.7, High: 0.5}}, cloud.ErrInvalidRequest},
		{"filters leave nothing", Config{Providers: []string{"gcp"}, Zones: []string{"us-east-1a"}}, cloud.ErrInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			require.ErrorIs(t, err, tc.kind)
		})
	}
}

func TestDescribeListTerminate(t *testing.T) {
	zone, typ := "us-east-2a", "g6.xlarge"
	m := newMarket(t, oneOffering(zone, typ, Constant(10)))
	a, err := m.Create(ctx, cloud.CreateRequest{JobID: "a", Zone: zone, InstanceType: typ, Capacity: cloud.Spot, Count: 2,
		Tags: map[string]string{"team": "x"}})
	require.NoError(t, err)
	b, err := m.Create(ctx, cloud.CreateRequest{JobID: "b", Zone: zone, InstanceType: typ, Capacity: cloud.OnDemand, Count: 1})
	require.NoError(t, err)
	for _, inst := range append(a, b...) {
		assert.Regexp(t, `^i-0[0-9a-f]{16}$`, inst.ID)
		assert.Equal(t, "aws", inst.Provider)
		assert.Equal(t, "us-east-2", inst.Region)
		assert.Equal(t, gpu.L4, inst.GPUType)
		assert.Equal(t, inst.JobID, inst.Tags[cloud.JobTag])
	}
	assert.Equal(t, "x", a[0].Tags["team"])

	got, err := m.Describe(ctx, []string{a[0].ID, "i-nope", b[0].ID})
	require.NoError(t, err)
	assert.Equal(t, []string{a[0].ID, b[0].ID}, cloud.IDs(got))

	listed, err := m.List(ctx, map[string]string{cloud.JobTag: "a"})
	require.NoError(t, err)
	assert.Equal(t, cloud.IDs(a), cloud.IDs(listed))
	listed, _ = m.List(ctx, map[string]string{"team": "y"})
	assert.Empty(t, listed)
	listed, _ = m.List(ctx, nil)
	assert.Len(t, listed, 3)

	require.NoError(t, m.Terminate(ctx, []string{a[0].ID}))
	require.NoError(t, m.Terminate(ctx, []string{a[0].ID, "i-nope"}), "terminate is idempotent")
	assert.Len(t, ofKind(m.EventsSince(0), cloud.EventTerminated), 1)
	listed, _ = m.List(ctx, map[string]string{cloud.JobTag: "a"})
	assert.Equal(t, []string{a[1].ID}, cloud.IDs(listed))
	got, _ = m.Describe(ctx, []string{a[0].ID})
	assert.Equal(t, cloud.StateTerminated, got[0].State, "gone instances stay describable")

	// Snapshots are copies: changing one does not reach the market.
	got[0].Tags["team"] = "changed"
	again, _ := m.Describe(ctx, []string{a[0].ID})
	assert.Equal(t, "x", again[0].Tags["team"])
}

func TestGCPInstanceNames(t *testing.T) {
	zone, typ := "us-west1-b", "a2-highgpu-1g"
	m := newMarket(t, oneOffering(zone, typ, Constant(3)))
	got, err := m.Create(ctx, spotReq(zone, typ, 2))
	require.NoError(t, err)
	assert.Equal(t, []string{"sim-gcp-000001", "sim-gcp-000002"}, cloud.IDs(got))
	assert.Equal(t, "gcp", got[0].Provider)
	assert.Equal(t, "us-west1", got[0].Region)
}

func TestClientTokenMakesCreateIdempotent(t *testing.T) {
	zone, typ := "us-east-1a", "p3.2xlarge"
	m := newMarket(t, oneOffering(zone, typ, Constant(3)))
	req := spotReq(zone, typ, 2)
	req.ClientToken = "tok-1"
	first, err := m.Create(ctx, req)
	require.NoError(t, err)
	m.Advance(5 * time.Minute)
	again, err := m.Create(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, cloud.IDs(first), cloud.IDs(again))
	assert.Equal(t, cloud.StateRunning, again[0].State, "the retry sees the instances as they are now")
	listed, _ := m.List(ctx, nil)
	assert.Len(t, listed, 2)

	// A request that got nothing is not remembered: its retry is a fresh attempt.
	req = spotReq(zone, typ, 2)
	req.ClientToken = "tok-2"
	got, err := m.Create(ctx, req)
	assert.Len(t, got, 1)
	require.ErrorIs(t, err, cloud.ErrInsufficientCapacity)
	req.ClientToken = "tok-3"
	_, err = m.Create(ctx, req)
	require.ErrorIs(t, err, cloud.ErrInsufficientCapacity)
	require.NoError(t, m.Terminate(ctx, cloud.IDs(first)))
	got, err = m.Create(ctx, req)
	require.NoError(t, err)
	assert.Len(t, got, 2)
}

func TestCanceledContext(t *testing.T) {
	m := newMarket(t, oneOffering("us-east-1a", "p3.2xlarge", Constant(3)))
	c, cancel := context.WithCancel(ctx)
	cancel()
	_, err := m.Create(c, spotReq("us-east-1a", "p3.2xlarge", 1))
	require.ErrorIs(t, err, context.Canceled)
	_, err = m.Offerings(c, cloud.OfferingFilter{})
	require.ErrorIs(t, err, context.Canceled)
}

func TestTimeNeverGoesBack(t *testing.T) {
	m := newMarket(t, oneOffering("us-east-1a", "p3.2xlarge", Constant(3)))
	m.Advance(time.Hour)
	m.AdvanceTo(DefaultStart)
	assert.Equal(t, DefaultStart.Add(time.Hour), m.Now())
}

func TestWatcherOfUnknownInstance(t *testing.T) {
	m := newMarket(t, oneOffering("us-east-1a", "p3.2xlarge", Constant(3)))
	_, err := m.Watcher("i-nope").Poll(ctx)
	require.ErrorIs(t, err, cloud.ErrNotFound)
}

func TestConfigEntriesOutsideTheFiltersAreIgnored(t *testing.T) {
	m := newMarket(t, Config{Zones: []string{"us-east-1a"},
		Capacity:      map[Key]Capacity{{Zone: "us-west-2a", InstanceType: "p3.2xlarge"}: Constant(3)},
		OnDemandLimit: map[Key]int{{Zone: "us-central1-a", InstanceType: "g2-standard-4"}: 1}})
	_, _, ok := m.SpotCapacity("us-west-2a", "p3.2xlarge")
	assert.False(t, ok)
}

func TestProviderParamsOverrideDefaults(t *testing.T) {
	zone, typ := "us-central1-a", "g2-standard-8"
	cfg := oneOffering(zone, typ, Capacity{Trace: steps(time.Duration(0), 1, time.Hour, 0)})
	cfg.Params = map[string]ProviderParams{"gcp": {BootTime: 3 * time.Minute, NoticePeriod: 45 * time.Second, MinBilled: -1}}
	m := newMarket(t, cfg)
	p := m.Params("gcp")
	assert.Equal(t, ProviderParams{BootTime: 3 * time.Minute, NoticePeriod: 45 * time.Second}, p)
	assert.Equal(t, DefaultParams("aws"), m.Params("aws"), "unset providers keep the defaults")

	got, err := m.Create(ctx, spotReq(zone, typ, 1))
	require.NoError(t, err)
	m.Advance(3*time.Minute + 10*time.Second)
	require.NoError(t, m.Terminate(ctx, cloud.IDs(got)))
	cost, _ := m.InstanceCost(got[0].ID)
	assert.InDelta(t, got[0].PricePerHour*10/3600, cost, 1e-12, "no minimum billed")

	got, err = m.Create(ctx, spotReq(zone, typ, 1))
	require.NoError(t, err)
	m.AdvanceTo(DefaultStart.Add(time.Hour + 45*time.Second))
	ev := ofKind(m.EventsSince(0), cloud.EventPreempted)
	require.Len(t, ev, 1)
	assert.Equal(t, got[0].ID, ev[0].Instance.ID)
	assert.Equal(t, DefaultStart.Add(time.Hour+45*time.Second), ev[0].Time)
}

// A recorded trace is its zone's spot capacity for its GPU type: the other shapes of that GPU
// there get none (no capacity invented beside the trace), while other GPUs, other zones and
// capacities set by hand keep theirs.
func TestATraceIsItsZonesCapacityForItsGPU(t *testing.T) {
	tr := steps(time.Duration(0), 3)
	tr.Source = "traces/us-east-1a_v100_1.json"
	m := newMarket(t, Config{Seed: 1, Providers: []string{"aws"}, Zones: []string{"us-east-1a", "us-east-1b"},
		Capacity: map[Key]Capacity{
			{Zone: "us-east-1a", InstanceType: "p3.2xlarge"}: {Trace: tr},
			{Zone: "us-east-1b", InstanceType: "g5.xlarge"}:  Constant(5),
		}})
	level := func(zone, typ string) int {
		t.Helper()
		l, _, ok := m.SpotCapacity(zone, typ)
		require.True(t, ok, "%s in %s", typ, zone)
		return l
	}
	assert.Equal(t, 3, level("us-east-1a", "p3.2xlarge"))
	assert.Zero(t, level("us-east-1a", "p3.8xlarge"), "no V100 capacity beside the trace")
	assert.Zero(t, level("us-east-1a", "p3.16xlarge"))
	b := newMarket(t, Config{Seed: 1, Providers: []string{"aws"}, Zones: []string{"us-east-1a", "us-east-1b"}})
	untraced := func(zone, typ string) int {
		l, _, _ := b.SpotCapacity(zone, typ)
		return l
	}
	assert.Equal(t, untraced("us-east-1b", "p3.8xlarge"), level("us-east-1b", "p3.8xlarge"), "another zone keeps its model")
	assert.Equal(t, untraced("us-east-1a", "g5.xlarge"), level("us-east-1a", "g5.xlarge"), "another GPU keeps its model")
	assert.Equal(t, untraced("us-east-1b", "g5.2xlarge"), level("us-east-1b", "g5.2xlarge"), "a capacity set by hand claims only its offering")
	assert.Positive(t, untraced("us-east-1a", "p3.8xlarge")+untraced("us-east-1a", "p3.16xlarge"), "without the trace there was capacity to invent")
}

// A market started into its traces meets the capacity the traces had then; capacities set by
// hand do not move.
func TestStartTracesAtReplaysFromThatMoment(t *testing.T) {
	tr := steps(time.Duration(0), 1, time.Hour, 5)
	tr.Source = "traces/us-east-1a_v100_1.json"
	cfg := Config{Seed: 1, Providers: []string{"aws"}, Zones: []string{"us-east-1a"},
		Capacity: map[Key]Capacity{
			{Zone: "us-east-1a", InstanceType: "p3.2xlarge"}: {Trace: tr},
			{Zone: "us-east-1a", InstanceType: "g5.xlarge"}:  Constant(2),
		}}
	cfg.StartTracesAt(90 * time.Minute)
	m := newMarket(t, cfg)
	l, _, ok := m.SpotCapacity("us-east-1a", "p3.2xlarge")
	require.True(t, ok)
	assert.Equal(t, 5, l, "an hour and a half in: the second step")
	l, _, _ = m.SpotCapacity("us-east-1a", "g5.xlarge")
	assert.Equal(t, 2, l)
}
