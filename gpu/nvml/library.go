// Package nvml discovers a machine's NVIDIA GPUs. The driver's NVML library sits behind the
// narrow Library interface so the node agent runs, and is tested, on machines without a
// driver: the real implementation (go-nvml, which dlopens libnvidia-ml.so.1 at run time)
// and a Fake live side by side.
package nvml

// Library is the part of NVML the node agent uses. Errors are plain errors so callers never
// see NVML's return codes; ErrLibraryNotFound marks the common "no driver here" case.
type Library interface {
	Init() error
	Shutdown() error
	DriverVersion() (string, error)
	// CUDADriverVersion is the CUDA version the driver supports, encoded as NVML does
	// (1000*major + 10*minor).
	CUDADriverVersion() (int, error)
	DeviceCount() (int, error)
	Device(index int) (Device, error)
}

// Device is one GPU as NVML sees it.
type Device interface {
	Name() (string, error)
	UUID() (string, error)
	// Memory returns total and used memory in bytes.
	Memory() (total, used uint64, err error)
	// Utilization returns the percentage of time a kernel ran over the last sample period.
	Utilization() (uint32, error)
	SMClockMHz() (uint32, error)
	// PowerMilliwatts is the board's current power draw.
	PowerMilliwatts() (uint32, error)
	MIGEnabled() (bool, error)
}
