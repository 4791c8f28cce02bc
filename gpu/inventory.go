// Package gpu holds the domain types that describe the accelerators of one machine. The
// packages beneath it talk to real hardware (gpu/nvml) and are kept out of this one so
// that workflows can carry an Inventory without linking a driver library.
package gpu

import "time"

// Inventory is what a node agent reports about its machine: who it is, which GPUs it has
// and, when it has none, why. A zero-GPU inventory always carries a Reason, so a user never
// has to guess whether the driver is missing or the machine simply has no accelerators.
type Inventory struct {
	NodeID        string    `json:"node_id"`
	Hostname      string    `json:"hostname"`
	DriverVersion string    `json:"driver_version,omitempty"`
	CUDAVersion   string    `json:"cuda_version,omitempty"`
	GPUs          []Device  `json:"gpus"`
	Reason        string    `json:"reason,omitempty"`
	CollectedAt   time.Time `json:"collected_at"`
}

// Device is one GPU with its static description and a telemetry sample taken when the
// inventory was collected. Telemetry fields are -1 when the driver could not report them
// (some fields are unsupported on some boards or in some MIG modes).
type Device struct {
	Index          int     `json:"index"`
	UUID           string  `json:"uuid"`
	Name           string  `json:"name"`
	MemoryTotalMiB int64   `json:"memory_total_mib"`
	MemoryUsedMiB  int64   `json:"memory_used_mib"`
	UtilizationPct int     `json:"utilization_pct"`
	SMClockMHz     int     `json:"sm_clock_mhz"`
	PowerW         float64 `json:"power_w"`
	MIGEnabled     bool    `json:"mig_enabled"`
}

// Model names the GPU model of the inventory: the single model when all GPUs agree, a
// "+"-joined list when the machine mixes models, and "-" when there are none.
func (inv Inventory) Model() string {
	seen := map[string]bool{}
	var names []string
	for _, d := range inv.GPUs {
		if !seen[d.Name] {
			seen[d.Name] = true
			names = append(names, d.Name)
		}
	}
	if len(names) == 0 {
		return "-"
	}
	out := names[0]
	for _, n := range names[1:] {
		out += "+" + n
	}
	return out
}

// TotalMemoryMiB sums the memory of every GPU.
func (inv Inventory) TotalMemoryMiB() int64 {
	var total int64
	for _, d := range inv.GPUs {
		total += d.MemoryTotalMiB
	}
	return total
}
