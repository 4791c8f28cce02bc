package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
)

func readUsage(t *testing.T, b *bytes.Buffer) []UsageRecord {
	t.Helper()
	var out []UsageRecord
	sc := bufio.NewScanner(b)
	for sc.Scan() {
		var r UsageRecord
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), sc.Text())
		out = append(out, r)
	}
	return out
}

func TestTheUsageReportHasALinePerInstanceThatRanAddingUpToTheJobsCost(t *testing.T) {
	zone, typ := "us-east-1a", "p3.2xlarge"
	cfg := oneOffering(zone, typ, Capacity{Trace: steps(time.Duration(0), 1, time.Hour, 0)})
	var usage bytes.Buffer
	cfg.Usage = &usage
	m := newMarket(t, cfg)
	spot, err := m.Create(ctx, spotReq(zone, typ, 1))
	require.NoError(t, err)
	od, err := m.Create(ctx, cloud.CreateRequest{JobID: "job-1", Zone: zone, InstanceType: typ, Capacity: cloud.OnDemand, Count: 2})
	require.NoError(t, err)
	require.NoError(t, m.Terminate(ctx, cloud.IDs(od[1:])), "terminated while pending: it never ran")
	boot := m.Params("aws").BootTime
	m.Advance(boot + 30*time.Minute)
	require.NoError(t, m.Terminate(ctx, cloud.IDs(od[:1])))
	m.Advance(5 * time.Hour) // the spot instance is preempted at 1h + the notice

	recs := readUsage(t, &usage)
	require.Len(t, recs, 2, "one line per instance that ran; the one terminated while pending cost nothing")
	byID := map[string]UsageRecord{}
	total := 0.0
	for _, r := range recs {
		byID[r.Instance] = r
		total += r.CostUSD
		assert.Equal(t, "job-1", r.Job)
		assert.Equal(t, zone, r.Zone)
		assert.Equal(t, typ, r.InstanceType)
		assert.Equal(t, DefaultStart.Add(boot), r.Running, "billed from the end of the boot")
	}
	o := byID[od[0].ID]
	assert.Equal(t, cloud.OnDemand, o.Capacity)
	assert.Equal(t, "terminated", o.End)
	assert.InDelta(t, 0.5, o.Hours, 1e-9)
	assert.InDelta(t, od[0].PricePerHour*0.5, o.CostUSD, 1e-9)
	s := byID[spot[0].ID]
	assert.Equal(t, cloud.Spot, s.Capacity)
	assert.Equal(t, "preempted", s.End)
	assert.Equal(t, DefaultStart.Add(time.Hour+m.Params("aws").NoticePeriod), s.Ended)
	assert.InDelta(t, s.Ended.Sub(s.Running).Hours(), s.Hours, 1e-9)
	assert.InDelta(t, m.CostUSD("job-1"), total, 1e-9, "the report adds up to the market's books")
	assert.Zero(t, m.UsageErrors())
}

func TestAShortRunIsReportedWithTheMinimumBilledAndAFailedWriteOnlyCounted(t *testing.T) {
	zone, typ := "us-central1-a", "g2-standard-4"
	cfg := oneOffering(zone, typ, Constant(2))
	var usage bytes.Buffer
	cfg.Usage = &usage
	m := newMarket(t, cfg)
	got, err := m.Create(ctx, cloud.CreateRequest{JobID: "j", Zone: zone, InstanceType: typ, Capacity: cloud.OnDemand, Count: 2})
	require.NoError(t, err)
	m.Advance(m.Params("gcp").BootTime + 20*time.Second)
	require.NoError(t, m.Terminate(ctx, cloud.IDs(got[:1])))
	recs := readUsage(t, &usage)
	require.Len(t, recs, 1)
	assert.InDelta(t, m.Params("gcp").MinBilled.Hours(), recs[0].Hours, 1e-9, "20 s of running is billed as the minimum")
	cost, _ := m.InstanceCost(got[0].ID)
	assert.InDelta(t, cost, recs[0].CostUSD, 1e-12)

	m.cfg.Usage = failingWriter{}
	require.NoError(t, m.Terminate(ctx, cloud.IDs(got[1:])), "the books do not depend on the report")
	assert.Equal(t, 1, m.UsageErrors())
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
