package nvml

import (
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Real is the Library backed by the NVIDIA driver through go-nvml. Its zero value is ready.
type Real struct{}

var _ Library = Real{}

func toError(ret gonvml.Return, what string) error {
	switch ret {
	case gonvml.SUCCESS:
		return nil
	case gonvml.ERROR_LIBRARY_NOT_FOUND:
		return ErrLibraryNotFound
	case gonvml.ERROR_NOT_SUPPORTED:
		return fmt.Errorf("%s: %w", what, ErrNotSupported)
	default:
		return fmt.Errorf("%s: %s", what, gonvml.ErrorString(ret))
	}
}

// Init loads the driver library and initialises NVML.
func (Real) Init() (err error) {
	// go-nvml panics in a few driver/loader corner cases instead of returning a code; a node
	// agent must survive them and report zero GPUs instead.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("initialising NVML: %v", r)
		}
	}()
	return toError(gonvml.Init(), "initialising NVML")
}

// Shutdown releases NVML.
func (Real) Shutdown() error { return toError(gonvml.Shutdown(), "shutting down NVML") }

// DriverVersion is the kernel driver's version string, as nvidia-smi prints it.
func (Real) DriverVersion() (string, error) {
	v, ret := gonvml.SystemGetDriverVersion()
	return v, toError(ret, "reading driver version")
}

// CUDADriverVersion is the highest CUDA version the driver supports.
func (Real) CUDADriverVersion() (int, error) {
	v, ret := gonvml.SystemGetCudaDriverVersion()
	return v, toError(ret, "reading CUDA driver version")
}

// DeviceCount is the number of GPUs the driver exposes.
func (Real) DeviceCount() (int, error) {
	n, ret := gonvml.DeviceGetCount()
	return n, toError(ret, "counting devices")
}

// Device returns the GPU at index.
func (Real) Device(index int) (Device, error) {
	d, ret := gonvml.DeviceGetHandleByIndex(index)
	if err := toError(ret, fmt.Sprintf("opening device %d", index)); err != nil {
		return nil, err
	}
	return realDevice{d}, nil
}

type realDevice struct{ d gonvml.Device }

func (r realDevice) Name() (string, error) {
	v, ret := r.d.GetName()
	return v, toError(ret, "reading name")
}

func (r realDevice) UUID() (string, error) {
	v, ret := r.d.GetUUID()
	return v, toError(ret, "reading UUID")
}

func (r realDevice) Memory() (uint64, uint64, error) {
	m, ret := r.d.GetMemoryInfo()
	return m.Total, m.Used, toError(ret, "reading memory")
}

func (r realDevice) Utilization() (uint32, error) {
	u, ret := r.d.GetUtilizationRates()
	return u.Gpu, toError(ret, "reading utilisation")
}

func (r realDevice) SMClockMHz() (uint32, error) {
	v, ret := r.d.GetClockInfo(gonvml.CLOCK_SM)
	return v, toError(ret, "reading SM clock")
}

func (r realDevice) PowerMilliwatts() (uint32, error) {
	v, ret := r.d.GetPowerUsage()
	return v, toError(ret, "reading power")
}

func (r realDevice) MIGEnabled() (bool, error) {
	current, _, ret := r.d.GetMigMode()
	if ret == gonvml.ERROR_NOT_SUPPORTED {
		return false, nil
	}
	return current == gonvml.DEVICE_MIG_ENABLE, toError(ret, "reading MIG mode")
}
