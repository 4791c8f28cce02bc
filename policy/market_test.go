package policy

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeTrace(t *testing.T, dir, name, body string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
}

func TestLoadMarketReadsASpotTracesDirectoryAndPricesItFromTheCatalog(t *testing.T) {
	dir := t.TempDir()
	writeTrace(t, dir, "us-east-2b_v100_1.json", `{"metadata":{"gap_seconds":600},"data":[2,1,0]}`)
	writeTrace(t, dir, "us-west-2a_v100_1.json", `{"metadata":{"gap_seconds":600},"data":[1,1,1,1]}`)
	writeTrace(t, dir, "us-west-2a_k80_1.json", `{"metadata":{"gap_seconds":600},"data":[1]}`)
	m, skipped, err := LoadMarket(dir)
	require.NoError(t, err)
	assert.Len(t, skipped, 1, "the K80 file is left out and named")
	assert.Equal(t, []string{"us-east-2b", "us-west-2a"}, m.Zones)
	assert.Equal(t, "p3.2xlarge", m.InstanceType)
	assert.Equal(t, 3.06, m.OnDemandPrice)
	assert.InDelta(t, 0.98, m.SpotPrice["us-east-2b"], 0.01)
	assert.Equal(t, 10*time.Minute, m.Gap)
	assert.Equal(t, 30*time.Minute, m.Length, "the shortest trace bounds the market")
	assert.Equal(t, 1, m.Capacity("us-east-2b", 10*time.Minute))
	assert.Equal(t, 0, m.Capacity("us-east-2b", 5*time.Hour), "the last count holds")
	assert.Equal(t, 0, m.Capacity("eu-west-1a", 0))
}

func TestLoadMarketNamesTheFileAndLineOfAMalformedTrace(t *testing.T) {
	dir := t.TempDir()
	writeTrace(t, dir, "us-east-2b_v100_1.json", `{"metadata":{"gap_seconds":600},"data":[1,1]}`)
	writeTrace(t, dir, "us-west-2a_v100_1.json", "{\"metadata\":{\"gap_seconds\":600},\n\"data\":[1,\"x\"]}")
	_, _, err := LoadMarket(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "us-west-2a_v100_1.json")
	assert.Contains(t, err.Error(), "line 2")
}

func TestLoadMarketRefusesAnEmptyDirectory(t *testing.T) {
	_, _, err := LoadMarket(t.TempDir())
	assert.ErrorContains(t, err, "no .json traces")
}

func TestTheBundledTracesLoad(t *testing.T) {
	m, skipped, err := LoadMarket("../cloud/sim/traces/aws-08-27-2023")
	require.NoError(t, err)
	assert.Empty(t, skipped)
	assert.Equal(t, []string{"us-east-2b", "us-west-2a", "us-west-2c"}, m.Zones)
	assert.Greater(t, m.Length, 10*24*time.Hour)
}

func TestOnlyKeepsTheListedZonesAndRefusesAnUnknownOne(t *testing.T) {
	m, _, err := LoadMarket("../cloud/sim/traces/aws-08-27-2023")
	require.NoError(t, err)
	one, err := m.Only([]string{"us-west-2c"})
	require.NoError(t, err)
	assert.Equal(t, []string{"us-west-2c"}, one.Zones)
	assert.Zero(t, one.Capacity("us-east-2b", 0))
	assert.Len(t, m.Zones, 3, "the market itself is unchanged")
	_, err = m.Only([]string{"us-east-1a"})
	assert.ErrorContains(t, err, `no trace of zone "us-east-1a"`)
}

// The public 1-node V100 trace holds files of one and of eight V100s per machine side by side:
// the market is of one shape, chosen by the caller; without a choice the refusal names the
// shapes and how to choose, and a choice the directory lacks names what it has.
func TestLoadMarketReplaysTheInstanceTypeChosenFromADirectoryOfSeveral(t *testing.T) {
	dir := t.TempDir()
	writeTrace(t, dir, "us-west-2a_v100_1.json", `{"metadata":{"gap_seconds":600},"data":[1,0,1]}`)
	writeTrace(t, dir, "us-west-2b_v100_1.json", `{"metadata":{"gap_seconds":600},"data":[1,1,1]}`)
	writeTrace(t, dir, "us-west-2a_v100_8.json", `{"metadata":{"gap_seconds":600},"data":[0,1,1]}`)

	_, _, err := LoadMarket(dir)
	require.Error(t, err)
	for _, want := range []string{"p3.2xlarge (us-west-2a, us-west-2b)", "p3.16xlarge (us-west-2a)", "--instance-type"} {
		assert.Contains(t, err.Error(), want)
	}

	m, _, err := LoadMarket(dir, "p3.16xlarge")
	require.NoError(t, err)
	assert.Equal(t, "p3.16xlarge", m.InstanceType)
	assert.Equal(t, 8, m.GPUsPerInst)
	assert.Equal(t, []string{"us-west-2a"}, m.Zones)
	assert.Equal(t, 1, m.Capacity("us-west-2a", 10*time.Minute), "the 8-GPU file's counts")

	m, _, err = LoadMarket(dir, "g5.xlarge", "p3.2xlarge")
	require.NoError(t, err, "the first type of the list the directory has")
	assert.Equal(t, []string{"us-west-2a", "us-west-2b"}, m.Zones)

	_, _, err = LoadMarket(dir, "p4d.24xlarge")
	assert.ErrorContains(t, err, "no traces of p4d.24xlarge; it has p3.16xlarge")
}
