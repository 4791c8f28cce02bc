package sim

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/cloud"
)

// traceDir holds SkyPilot's spot-traces in the shared data folder beside the repository
// (see shared/data/README.md).
const traceDir = "../../../shared/data/spot-traces/availability"

// sharedTraces returns the path of rel under traceDir. A checkout without the shared data
// folder fails loudly: a replay test that silently skipped would prove nothing.
func sharedTraces(t *testing.T, rel string) string {
	t.Helper()
	if _, err := os.Stat(traceDir); errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("shared spot-traces not found at %s: the repository must sit beside shared/ (as in CI)", traceDir)
	}
	return filepath.Join(traceDir, rel)
}

func TestParseSkyPilotTrace(t *testing.T) {
	tr, err := ParseTrace([]byte(`{"metadata": {"gap_seconds": 300}, "data": [0, 3, 3, 16], "prices": [0.9, 0.9, 1, 1]}`))
	require.NoError(t, err)
	assert.Equal(t, Instances, tr.Unit)
	assert.Equal(t, 5*time.Minute, tr.Gap)
	assert.Equal(t, []Step{{0, 0}, {5 * time.Minute, 3}, {10 * time.Minute, 3}, {15 * time.Minute, 16}}, tr.Steps)
	assert.Equal(t, 3, tr.CountAt(7*time.Minute))
	assert.Equal(t, 16, tr.CountAt(48*time.Hour), "the last value holds after the end")
	require.NoError(t, tr.Validate())
}

func TestParseSailorTrace(t *testing.T) {
	tr, err := ParseTrace([]byte(` [{"Time": 0, "GPUs": 16}, {"Time": 600, "GPUs": 6}, {"Time": 1800.5, "GPUs": 0}]`))
	require.NoError(t, err)
	assert.Equal(t, GPUs, tr.Unit)
	assert.Equal(t, []Step{{0, 16}, {10 * time.Minute, 6}, {1800*time.Second + 500*time.Millisecond, 0}}, tr.Steps)
	// Attached to 4-GPU instances, GPU counts become whole instances.
	assert.Equal(t, []Step{{0, 4}, {10 * time.Minute, 1}, {1800*time.Second + 500*time.Millisecond, 0}}, tr.instanceSteps(4))
}

func TestSailorTraceDrivesCapacityInInstances(t *testing.T) {
	tr, err := ParseTrace([]byte(`[{"Time": 60, "GPUs": 17}, {"Time": 600, "GPUs": 7}]`))
	require.NoError(t, err)
	zone, typ := "us-east-1a", "p3.8xlarge" // 4 GPUs
	m := newMarket(t, oneOffering(zone, typ, Capacity{Trace: tr}))
	level, _, _ := m.SpotCapacity(zone, typ)
	assert.Equal(t, 0, level, "nothing before the first entry")
	m.Advance(time.Minute)
	level, _, _ = m.SpotCapacity(zone, typ)
	assert.Equal(t, 4, level)
	m.Advance(10 * time.Minute)
	level, _, _ = m.SpotCapacity(zone, typ)
	assert.Equal(t, 1, level)
}

func TestMalformedTraces(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"empty file", "  \n", "empty file"},
		{"not JSON", "time,count\n0,1\n", "not JSON"},
		{"broken JSON", `{"metadata": {"gap_seconds": 300}, "data": [1, 2`, "skypilot format"},
		{"missing metadata", `{"data": [1]}`, "missing metadata.gap_seconds"},
		{"missing gap", `{"metadata": {}, "data": [1]}`, "missing metadata.gap_seconds"},
		{"zero gap", `{"metadata": {"gap_seconds": 0}, "data": [1]}`, "gap_seconds must be positive"},
		{"negative gap", `{"metadata": {"gap_seconds": -5}, "data": [1]}`, "gap_seconds must be positive"},
		{"missing data", `{"metadata": {"gap_seconds": 300}}`, "missing data"},
		{"empty data", `{"metadata": {"gap_seconds": 300}, "data": []}`, "empty data"},
		{"negative count", `{"metadata": {"gap_seconds": 300}, "data": [1, -2]}`, "data[1]: negative count"},
		{"fractional count", `{"metadata": {"gap_seconds": 300}, "data": [1.5]}`, "not a whole number"},
		{"text count", `{"metadata": {"gap_seconds": 300}, "data": ["many"]}`, "skypilot format"},
		{"empty list", `[]`, "empty list"},
		{"missing field", `[{"Time": 0}]`, "lacks Time or GPUs"},
		{"non-monotonic time", `[{"Time": 0, "GPUs": 1}, {"Time": 60, "GPUs": 2}, {"Time": 30, "GPUs": 1}]`, "entry 2: Time 30 does not increase"},
		{"repeated time", `[{"Time": 0, "GPUs": 1}, {"Time": 0, "GPUs": 2}]`, "does not increase"},
		{"negative time", `[{"Time": -1, "GPUs": 1}]`, "negative Time"},
		{"negative GPUs", `[{"Time": 0, "GPUs": -8}]`, "negative count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTrace([]byte(tc.data))
			require.ErrorIs(t, err, ErrBadTrace)
			assert.ErrorContains(t, err, tc.want)

			path := filepath.Join(t.TempDir(), "bad.json")
			require.NoError(t, os.WriteFile(path, []byte(tc.data), 0o644))
			_, err = LoadTrace(path)
			require.ErrorIs(t, err, ErrBadTrace)
			assert.ErrorContains(t, err, path, "the error names the file")
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestLoadTraceMissingFile(t *testing.T) {
	_, err := LoadTrace(filepath.Join(t.TempDir(), "nope.json"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorContains(t, err, "nope.json")
}

func TestLoadRealTrace(t *testing.T) {
	tr, err := LoadTrace(sharedTraces(t, "1-node/aws-02-15-2023/us-east-1a_v100_1.json"))
	require.NoError(t, err)
	assert.Equal(t, 195*time.Second, tr.Gap)
	assert.Len(t, tr.Steps, 20158)
	assert.Contains(t, tr.Source, "us-east-1a_v100_1.json")
	require.NoError(t, tr.Validate())
}

func TestLoadSkyPilotDir(t *testing.T) {
	traces, skipped, err := LoadSkyPilotDir(sharedTraces(t, "16-node/aws-08-27-2023"))
	require.NoError(t, err)
	assert.Empty(t, skipped)
	assert.Len(t, traces, 3)
	for _, zone := range []string{"us-east-2b", "us-west-2a", "us-west-2c"} {
		tr := traces[Key{Zone: zone, InstanceType: "p3.2xlarge"}]
		require.NotNil(t, tr, zone)
		assert.Equal(t, 5*time.Minute, tr.Gap)
	}

	var cfg Config
	_, err = cfg.AttachSkyPilotDir(sharedTraces(t, "1-node/aws-02-15-2023"))
	require.NoError(t, err)
	assert.Len(t, cfg.Capacity, 9)
	cfg.Providers = []string{"aws"}
	m := newMarket(t, cfg)
	level, _, ok := m.SpotCapacity("us-east-1a", "p3.2xlarge")
	assert.True(t, ok)
	assert.Equal(t, 0, level, "the us-east-1a trace starts with no capacity")
}

func TestLoadSkyPilotDirErrors(t *testing.T) {
	write := func(dir, name, data string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	good := `{"metadata": {"gap_seconds": 60}, "data": [1]}`

	// A GPU the simulated catalog has no instance type for is left out and named; only a
	// directory with nothing else is refused.
	dir := t.TempDir()
	write(dir, "us-east-1a_k80_1.json", good)
	_, skipped, err := LoadSkyPilotDir(dir)
	assert.ErrorContains(t, err, "no instance type for k80 x1")
	assert.ErrorContains(t, err, "us-east-1a_k80_1.json")
	assert.Len(t, skipped, 1)
	write(dir, "us-east-1a_v100_1.json", good)
	traces, skipped, err := LoadSkyPilotDir(dir)
	require.NoError(t, err)
	assert.Len(t, traces, 1)
	require.Len(t, skipped, 1)
	assert.Contains(t, skipped[0], "us-east-1a_k80_1.json")

	dir = t.TempDir()
	write(dir, "us-east-1a.json", good)
	_, _, err = LoadSkyPilotDir(dir)
	assert.ErrorContains(t, err, "is not <zone>_<gpu>_<count>.json")

	dir = t.TempDir()
	write(dir, "us-east-1a_v100_1.json", `{"data": [1]}`)
	_, _, err = LoadSkyPilotDir(dir)
	require.ErrorIs(t, err, ErrBadTrace)
	assert.ErrorContains(t, err, "us-east-1a_v100_1.json")

	// A malformed file names the line and column, not only the byte offset.
	dir = t.TempDir()
	write(dir, "us-east-1a_v100_1.json", "{\"metadata\": {\"gap_seconds\": 60},\n \"data\": [1, 2,\n  3 4]}")
	_, _, err = LoadSkyPilotDir(dir)
	require.ErrorIs(t, err, ErrBadTrace)
	assert.ErrorContains(t, err, "us-east-1a_v100_1.json")
	assert.ErrorContains(t, err, "line 3, column 5")
	write(dir, "us-east-1a_v100_1.json", "{\"metadata\": {\"gap_seconds\": 60},\n \"data\": [1, \"two\"]}")
	_, _, err = LoadSkyPilotDir(dir)
	assert.ErrorContains(t, err, "line 2")

	_, _, err = LoadSkyPilotDir(t.TempDir())
	assert.ErrorContains(t, err, "no .json traces")

	_, _, err = LoadSkyPilotDir(filepath.Join(t.TempDir(), "missing"))
	require.ErrorIs(t, err, fs.ErrNotExist)

	// A trace for a zone the catalog does not offer fails when the market is built.
	dir = t.TempDir()
	write(dir, "ap-south-1a_v100_1.json", good)
	var cfg Config
	_, err = cfg.AttachSkyPilotDir(dir)
	require.NoError(t, err)
	_, err = New(cfg)
	require.ErrorIs(t, err, cloud.ErrNotFound)
}
