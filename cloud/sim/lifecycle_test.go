package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
)

func TestBootTimePerProvider(t *testing.T) {
	for _, tc := range []struct {
		zone, typ string
		boot      time.Duration
	}{
		{"us-east-1a", "p3.2xlarge", 2 * time.Minute},
		{"us-central1-a", "a2-highgpu-1g", time.Minute},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			m := newMarket(t, oneOffering(tc.zone, tc.typ, Constant(4)))
			start := m.Now()
			got, err := m.Create(ctx, spotReq(tc.zone, tc.typ, 1))
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, cloud.StatePending, got[0].State)
			id := got[0].ID

			m.AdvanceTo(start.Add(tc.boot - time.Second))
			d, _ := m.Describe(ctx, []string{id})
			assert.Equal(t, cloud.StatePending, d[0].State)

			m.AdvanceTo(start.Add(tc.boot))
			d, _ = m.Describe(ctx, []string{id})
			assert.Equal(t, cloud.StateRunning, d[0].State)

			ev := m.EventsSince(0)
			require.Len(t, ev, 2)
			assert.Equal(t, cloud.EventCreated, ev[0].Kind)
			assert.Equal(t, start, ev[0].Time)
			assert.Equal(t, cloud.EventRunning, ev[1].Kind)
			assert.Equal(t, start.Add(tc.boot), ev[1].Time)
			assert.Equal(t, int64(1), ev[0].Seq)
			assert.Equal(t, int64(2), ev[1].Seq)
		})
	}
}

func TestNoticePrecedesPreemptionByProviderPeriod(t *testing.T) {
	drop := 30 * time.Minute
	for _, tc := range []struct {
		zone, typ, provider string
		notice              time.Duration
	}{
		{"us-west-2a", "p3.2xlarge", "aws", 2 * time.Minute},
		{"us-central1-b", "n1-standard-8+nvidia-tesla-v100:1", "gcp", 30 * time.Second},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			m := newMarket(t, oneOffering(tc.zone, tc.typ, Capacity{Trace: steps(time.Duration(0), 1, drop, 0)}))
			start := m.Now()
			got, err := m.Create(ctx, spotReq(tc.zone, tc.typ, 1))
			require.NoError(t, err)
			id := got[0].ID
			assert.Equal(t, tc.provider, got[0].Provider)

			m.AdvanceTo(start.Add(drop - time.Second))
			verdict, _, err := cloud.ConfirmLost(ctx, m, id)
			require.NoError(t, err)
			assert.Equal(t, cloud.VerdictAlive, verdict)
			assert.Nil(t, m.InterruptionOf(id))

			m.AdvanceTo(start.Add(drop))
			verdict, inst, err := cloud.ConfirmLost(ctx, m, id)
			require.NoError(t, err)
			assert.Equal(t, cloud.VerdictNotice, verdict)
			assert.Equal(t, cloud.StateRunning, inst.State)
			intr, err := m.Watcher(id).Poll(ctx)
			require.NoError(t, err)
			require.NotNil(t, intr)
			assert.Equal(t, cloud.Notice, intr.Kind)
			assert.Equal(t, start.Add(drop+tc.notice), intr.Deadline)
			assert.Equal(t, start.Add(drop), intr.At)

			m.AdvanceTo(start.Add(drop + tc.notice - time.Nanosecond))
			verdict, _, _ = cloud.ConfirmLost(ctx, m, id)
			assert.Equal(t, cloud.VerdictNotice, verdict, "preempted before the deadline")

			m.AdvanceTo(start.Add(drop + tc.notice))
			verdict, inst, _ = cloud.ConfirmLost(ctx, m, id)
			assert.Equal(t, cloud.VerdictPreempted, verdict)
			assert.Equal(t, cloud.StatePreempted, inst.State)

			ev := m.EventsSince(0)
			notices, preempted := ofKind(ev, cloud.EventNotice), ofKind(ev, cloud.EventPreempted)
			require.Len(t, notices, 1)
			require.Len(t, preempted, 1)
			assert.Equal(t, tc.notice, preempted[0].Time.Sub(notices[0].Time))
			assert.Less(t, notices[0].Seq, preempted[0].Seq)

			listed, _ := m.List(ctx, nil)
			assert.Empty(t, listed, "a preempted instance is gone")
		})
	}
}

func TestNewestInstancesAreNoticedFirst(t *testing.T) {
	zone, typ := "us-east-1a", "g5.xlarge"
	m := newMarket(t, oneOffering(zone, typ, Capacity{Trace: steps(
		time.Duration(0), 3, time.Hour, 2, 2*time.Hour, 0)}))
	var created []string
	for i := range 3 {
		got, err := m.Create(ctx, spotReq(zone, typ, 1))
		require.NoError(t, err, "instance %d", i)
		created = append(created, got[0].ID)
		m.Advance(time.Minute)
	}
	_, err := m.Create(ctx, spotReq(zone, typ, 1))
	require.ErrorIs(t, err, cloud.ErrInsufficientCapacity)

	m.AdvanceTo(DefaultStart.Add(time.Hour))
	notices := ofKind(m.EventsSince(0), cloud.EventNotice)
	require.Len(t, notices, 1)
	assert.Equal(t, created[2], notices[0].Instance.ID)
	_, free, _ := m.SpotCapacity(zone, typ)
	assert.Equal(t, 0, free, "the noticed instance's slot is already taken back")

	m.AdvanceTo(DefaultStart.Add(2 * time.Hour))
	notices = ofKind(m.EventsSince(0), cloud.EventNotice)
	require.Len(t, notices, 3, "the instance already leaving gets no second notice")
	assert.Equal(t, []string{created[2], created[1], created[0]},
		[]string{notices[0].Instance.ID, notices[1].Instance.ID, notices[2].Instance.ID})
}

func TestTerminateDuringNoticeIsNotPreemption(t *testing.T) {
	zone, typ := "us-east-1a", "p3.2xlarge"
	m := newMarket(t, oneOffering(zone, typ, Capacity{Trace: steps(time.Duration(0), 1, time.Hour, 0)}))
	got, err := m.Create(ctx, spotReq(zone, typ, 1))
	require.NoError(t, err)
	m.AdvanceTo(DefaultStart.Add(time.Hour + time.Minute))
	require.NoError(t, m.Terminate(ctx, cloud.IDs(got)))
	m.Advance(time.Hour)
	ev := m.EventsSince(0)
	assert.Empty(t, ofKind(ev, cloud.EventPreempted))
	require.Len(t, ofKind(ev, cloud.EventTerminated), 1)
	d, _ := m.Describe(ctx, cloud.IDs(got))
	assert.Equal(t, cloud.StateTerminated, d[0].State)
}

func TestSpotPartialFulfilment(t *testing.T) {
	zone, typ := "us-west-2b", "p3.2xlarge"
	m := newMarket(t, oneOffering(zone, typ, Constant(3)))
	got, err := m.Create(ctx, spotReq(zone, typ, 5))
	require.Len(t, got, 3)
	require.ErrorIs(t, err, cloud.ErrInsufficientCapacity)
	e, ok := cloud.AsError(err)
	require.True(t, ok)
	assert.Equal(t, CodeAWSInsufficientCapacity, e.Code)
	assert.Equal(t, "aws", e.Provider)
	assert.Equal(t, &cloud.OfferingKey{Capacity: cloud.Spot, InstanceType: typ, Zone: zone}, e.Offering)

	got, err = m.Create(ctx, spotReq(zone, typ, 1))
	assert.Nil(t, got, "nothing free gives a nil slice")
	require.ErrorIs(t, err, cloud.ErrInsufficientCapacity)

	// Terminating frees the slot again.
	require.NoError(t, m.Terminate(ctx, []string{"i-unknown"}))
	listed, _ := m.List(ctx, nil)
	require.NoError(t, m.Terminate(ctx, []string{listed[0].ID}))
	got, err = m.Create(ctx, spotReq(zone, typ, 1))
	require.NoError(t, err)
	assert.Len(t, got, 1)
}

func TestGCPCapacityErrorCode(t *testing.T) {
	zone, typ := "us-central1-a", "g2-standard-4"
	m := newMarket(t, oneOffering(zone, typ, Constant(0)))
	_, err := m.Create(ctx, spotReq(zone, typ, 1))
	e, ok := cloud.AsError(err)
	require.True(t, ok)
	assert.Equal(t, CodeGCPResourceExhausted, e.Code)
	assert.Equal(t, "gcp", e.Provider)
}

func TestOnDemandLimitModelsOnDemandShortage(t *testing.T) {
	zone, typ := "us-east-1a", "p4d.24xlarge"
	cfg := oneOffering(zone, typ, Constant(0))
	cfg.OnDemandLimit = map[Key]int{{Zone: zone, InstanceType: typ}: 1}
	m := newMarket(t, cfg)
	req := cloud.CreateRequest{JobID: "j", Zone: zone, InstanceType: typ, Capacity: cloud.OnDemand, Count: 2}
	got, err := m.Create(ctx, req)
	assert.Len(t, got, 1)
	require.ErrorIs(t, err, cloud.ErrInsufficientCapacity)
	e, _ := cloud.AsError(err)
	assert.Equal(t, cloud.OnDemand, e.Offering.Capacity)

	// Without a limit on-demand is unlimited, whatever the spot capacity.
	m2 := newMarket(t, oneOffering(zone, typ, Constant(0)))
	req.Count = 50
	got, err = m2.Create(ctx, req)
	require.NoError(t, err)
	assert.Len(t, got, 50)
	assert.Equal(t, cloud.OnDemand, got[0].Capacity)
}

func TestQuotaOnGPUs(t *testing.T) {
	zone, typ := "us-east-1a", "p3.8xlarge" // 4 GPUs each
	cfg := oneOffering(zone, typ, Constant(10))
	cfg.Params = map[string]ProviderParams{"aws": {MaxGPUs: 8}}
	m := newMarket(t, cfg)
	got, err := m.Create(ctx, spotReq(zone, typ, 2))
	require.NoError(t, err)

	more, err := m.Create(ctx, spotReq(zone, typ, 1))
	assert.Nil(t, more)
	require.ErrorIs(t, err, cloud.ErrQuota)
	e, _ := cloud.AsError(err)
	assert.Equal(t, CodeAWSSpotQuota, e.Code)

	_, err = m.Create(ctx, cloud.CreateRequest{JobID: "j", Zone: zone, InstanceType: typ, Capacity: cloud.OnDemand, Count: 1})
	require.ErrorIs(t, err, cloud.ErrQuota, "the quota covers on-demand too")

	require.NoError(t, m.Terminate(ctx, cloud.IDs(got[:1])))
	more, err = m.Create(ctx, spotReq(zone, typ, 1))
	require.NoError(t, err, "terminating gives the quota back")
	assert.Len(t, more, 1)
}
