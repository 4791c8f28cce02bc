package nvml

import "fmt"

// Fake is a Library with canned devices and injectable errors, for tests and for machines
// where a simulated GPU inventory is wanted. Calls are recorded so tests can check that
// Shutdown follows a successful Init.
type Fake struct {
	InitErr       error
	Driver        string
	CUDA          int
	Devices       []FakeDevice
	CountErr      error
	InitCalls     int
	ShutdownCalls int
}

var _ Library = (*Fake)(nil)

// FakeDevice is one canned GPU. A non-nil Err makes every telemetry read fail with it,
// which is how a test models a device in a bad state.
type FakeDevice struct {
	DeviceName   string
	DeviceUUID   string
	TotalBytes   uint64
	UsedBytes    uint64
	UtilPct      uint32
	SMClock      uint32
	PowerMW      uint32
	MIG          bool
	TelemetryErr error
	OpenErr      error
}

// Reset forgets recorded calls.
func (f *Fake) Reset() { f.InitCalls, f.ShutdownCalls = 0, 0 }

func (f *Fake) Init() error                     { f.InitCalls++; return f.InitErr }
func (f *Fake) Shutdown() error                 { f.ShutdownCalls++; return nil }
func (f *Fake) DriverVersion() (string, error)  { return f.Driver, nil }
func (f *Fake) CUDADriverVersion() (int, error) { return f.CUDA, nil }

func (f *Fake) DeviceCount() (int, error) {
	if f.CountErr != nil {
		return 0, f.CountErr
	}
	return len(f.Devices), nil
}

func (f *Fake) Device(index int) (Device, error) {
	if index < 0 || index >= len(f.Devices) {
		return nil, fmt.Errorf("opening device %d: no such device", index)
	}
	d := f.Devices[index]
	if d.OpenErr != nil {
		return nil, d.OpenErr
	}
	return d, nil
}

func (d FakeDevice) Name() (string, error) { return d.DeviceName, nil }
func (d FakeDevice) UUID() (string, error) { return d.DeviceUUID, nil }
func (d FakeDevice) Memory() (uint64, uint64, error) {
	return d.TotalBytes, d.UsedBytes, d.TelemetryErr
}
func (d FakeDevice) Utilization() (uint32, error)     { return d.UtilPct, d.TelemetryErr }
func (d FakeDevice) SMClockMHz() (uint32, error)      { return d.SMClock, d.TelemetryErr }
func (d FakeDevice) PowerMilliwatts() (uint32, error) { return d.PowerMW, d.TelemetryErr }
func (d FakeDevice) MIGEnabled() (bool, error)        { return d.MIG, d.TelemetryErr }

// FakeH200 returns a fake with n H200 GPUs as the driver on our H200 machine reports them.
func FakeH200(n int) *Fake {
	f := &Fake{Driver: "580.159.04", CUDA: 13000}
	for i := 0; i < n; i++ {
		f.Devices = append(f.Devices, FakeDevice{
			DeviceName: "NVIDIA H200",
			DeviceUUID: fmt.Sprintf("GPU-fake-%04d", i),
			TotalBytes: 143771 << 20,
			UsedBytes:  512 << 20,
			SMClock:    1980,
			PowerMW:    127000,
		})
	}
	return f
}
