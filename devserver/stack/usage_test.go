package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/sim"
)

// The stack's market writes its usage report where Options.Usage says.
func TestTheMarketWritesItsUsageReportToOptionsUsage(t *testing.T) {
	t.Parallel()
	var usage bytes.Buffer
	m, _, err := NewMarket(Options{Seed: 1, NoTraces: true, Usage: &usage})
	require.NoError(t, err)
	ctx := context.Background()
	got, err := m.Create(ctx, cloud.CreateRequest{JobID: "j", Zone: "us-east-1a", InstanceType: "p3.2xlarge",
		Capacity: cloud.OnDemand, Count: 1})
	require.NoError(t, err)
	m.Advance(m.Params("aws").BootTime + sim.DefaultRetention)
	require.NoError(t, m.Terminate(ctx, cloud.IDs(got)))
	var rec sim.UsageRecord
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(usage.Bytes()), &rec), usage.String())
	assert.Equal(t, got[0].ID, rec.Instance)
	assert.Equal(t, "j", rec.Job)
	assert.InDelta(t, m.CostUSD("j"), rec.CostUSD, 1e-9)
	assert.Greater(t, rec.CostUSD, 0.0)
}
