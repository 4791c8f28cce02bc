package nvml

import (
	"errors"
	"fmt"
	"time"

	"github.com/schooner-ml/schooner/gpu"
)

// Discover builds the inventory of this machine. It never fails: when NVML cannot be used
// the inventory has zero GPUs and a Reason a person can act on, and a device that cannot be
// opened is left out with its error added to the Reason. Telemetry a device cannot report
// is -1 rather than a misleading zero.
func Discover(lib Library, nodeID, hostname string, now time.Time) gpu.Inventory {
	inv := gpu.Inventory{NodeID: nodeID, Hostname: hostname, GPUs: []gpu.Device{}, CollectedAt: now}
	if err := lib.Init(); err != nil {
		if errors.Is(err, ErrLibraryNotFound) {
			inv.Reason = "no NVIDIA driver: libnvidia-ml.so.1 could not be loaded (CPU-only machine, or the driver is not on the loader path)"
		} else {
			inv.Reason = fmt.Sprintf("NVML unusable: %v", err)
		}
		return inv
	}
	defer func() { _ = lib.Shutdown() }()

	if v, err := lib.DriverVersion(); err == nil {
		inv.DriverVersion = v
	}
	if v, err := lib.CUDADriverVersion(); err == nil && v > 0 {
		inv.CUDAVersion = fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
	}
	n, err := lib.DeviceCount()
	if err != nil {
		inv.Reason = fmt.Sprintf("NVML could not count devices: %v", err)
		return inv
	}
	var problems []string
	for i := 0; i < n; i++ {
		d, err := lib.Device(i)
		if err != nil {
			problems = append(problems, fmt.Sprintf("device %d: %v", i, err))
			continue
		}
		inv.GPUs = append(inv.GPUs, describe(i, d))
	}
	switch {
	case n == 0:
		inv.Reason = "NVIDIA driver loaded but it reports no GPUs"
	case len(problems) > 0:
		inv.Reason = fmt.Sprintf("%d of %d GPUs could not be opened: %v", len(problems), n, problems)
	}
	return inv
}

func describe(index int, d Device) gpu.Device {
	out := gpu.Device{Index: index, MemoryTotalMiB: -1, MemoryUsedMiB: -1, UtilizationPct: -1, SMClockMHz: -1, PowerW: -1}
	if v, err := d.Name(); err == nil {
		out.Name = v
	}
	if v, err := d.UUID(); err == nil {
		out.UUID = v
	}
	if total, used, err := d.Memory(); err == nil {
		out.MemoryTotalMiB, out.MemoryUsedMiB = int64(total>>20), int64(used>>20)
	}
	if v, err := d.Utilization(); err == nil {
		out.UtilizationPct = int(v)
	}
	if v, err := d.SMClockMHz(); err == nil {
		out.SMClockMHz = int(v)
	}
	if v, err := d.PowerMilliwatts(); err == nil {
		out.PowerW = float64(v) / 1000
	}
	if v, err := d.MIGEnabled(); err == nil {
		out.MIGEnabled = v
	}
	return out
}
