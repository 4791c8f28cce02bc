package nvml

import "errors"

// ErrLibraryNotFound means libnvidia-ml.so.1 could not be loaded: the machine has no NVIDIA
// driver (or it is not on the loader path). It is the normal state of a CPU-only machine.
var ErrLibraryNotFound = errors.New("NVIDIA driver library libnvidia-ml.so.1 not found")

// ErrNotSupported means the device does not report the requested field.
var ErrNotSupported = errors.New("not supported by this device")
