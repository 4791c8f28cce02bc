package nvml

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var at = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func TestDiscoverFakeDevices(t *testing.T) {
	f := FakeH200(2)
	inv := Discover(f, "n1", "host1", at)
	require.Len(t, inv.GPUs, 2)
	assert.Empty(t, inv.Reason)
	assert.Equal(t, "580.159.04", inv.DriverVersion)
	assert.Equal(t, "13.0", inv.CUDAVersion)
	assert.Equal(t, "NVIDIA H200", inv.Model())
	assert.Equal(t, int64(143771), inv.GPUs[0].MemoryTotalMiB)
	assert.Equal(t, int64(2*143771), inv.TotalMemoryMiB())
	assert.Equal(t, 1980, inv.GPUs[1].SMClockMHz)
	assert.InDelta(t, 127.0, inv.GPUs[1].PowerW, 1e-9)
	assert.Equal(t, 1, inv.GPUs[1].Index)
	assert.Equal(t, 1, f.InitCalls)
	assert.Equal(t, 1, f.ShutdownCalls, "a successful Init must be paired with Shutdown")
}

func TestDiscoverMissingLibrary(t *testing.T) {
	f := &Fake{InitErr: ErrLibraryNotFound}
	inv := Discover(f, "n1", "host1", at)
	assert.Empty(t, inv.GPUs)
	assert.NotNil(t, inv.GPUs, "an empty list, not null, so JSON consumers see []")
	assert.Contains(t, inv.Reason, "no NVIDIA driver")
	assert.Equal(t, "-", inv.Model())
	assert.Equal(t, 0, f.ShutdownCalls, "Shutdown must not follow a failed Init")
}

func TestDiscoverOtherInitError(t *testing.T) {
	inv := Discover(&Fake{InitErr: errors.New("driver/library version mismatch")}, "n1", "h", at)
	assert.Empty(t, inv.GPUs)
	assert.Contains(t, inv.Reason, "version mismatch")
}

func TestDiscoverDriverWithoutGPUs(t *testing.T) {
	inv := Discover(&Fake{Driver: "580"}, "n1", "h", at)
	assert.Empty(t, inv.GPUs)
	assert.Contains(t, inv.Reason, "reports no GPUs")
}

func TestDiscoverPartialFailures(t *testing.T) {
	f := FakeH200(3)
	f.Devices[1].OpenErr = errors.New("GPU is lost")
	f.Devices[2].TelemetryErr = ErrNotSupported
	inv := Discover(f, "n1", "h", at)
	require.Len(t, inv.GPUs, 2)
	assert.Contains(t, inv.Reason, "1 of 3 GPUs could not be opened")
	assert.Contains(t, inv.Reason, "GPU is lost")
	bad := inv.GPUs[1]
	assert.Equal(t, 2, bad.Index)
	assert.Equal(t, "NVIDIA H200", bad.Name, "static fields survive telemetry errors")
	assert.Equal(t, int64(-1), bad.MemoryTotalMiB)
	assert.Equal(t, -1, bad.UtilizationPct)
	assert.Equal(t, -1.0, bad.PowerW)
}

func TestDiscoverCountError(t *testing.T) {
	f := FakeH200(1)
	f.CountErr = errors.New("boom")
	inv := Discover(f, "n1", "h", at)
	assert.Empty(t, inv.GPUs)
	assert.Contains(t, inv.Reason, "could not count devices")
}

// TestRealLibraryNeverPanics runs the go-nvml backed library on whatever machine the tests
// run on. Without a driver it must report the missing library; with one (the H200 node) it
// must report at least one GPU. Either way it must not crash.
func TestRealLibraryNeverPanics(t *testing.T) {
	inv := Discover(Real{}, "n1", "h", at)
	if len(inv.GPUs) == 0 {
		assert.NotEmpty(t, inv.Reason, "zero GPUs must always come with a reason")
	} else {
		assert.NotEmpty(t, inv.GPUs[0].Name)
		assert.NotEmpty(t, inv.DriverVersion)
	}
}
