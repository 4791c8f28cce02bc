package gceapi

import (
	"fmt"
	"strconv"
	"strings"
)

// The backend names GCE shapes as the catalog does: the machine type alone when it carries
// its GPUs (a2-highgpu-1g), or "<machine type>+<accelerator>:<count>" for N1 machines with
// attached GPUs (n1-standard-8+nvidia-tesla-v100:1). The API spells the second as a
// machineType plus guestAccelerators; these two functions translate between the spellings.

// shapeName joins a machine type and its attached accelerators into the backend's name.
func shapeName(machineType, accelerator string, count int) string {
	if accelerator == "" || count <= 0 {
		return machineType
	}
	return fmt.Sprintf("%s+%s:%d", machineType, accelerator, count)
}

// splitShape is the inverse of shapeName.
func splitShape(name string) (machineType, accelerator string, count int) {
	mt, rest, ok := strings.Cut(name, "+")
	if !ok {
		return name, "", 0
	}
	acc, n, ok := strings.Cut(rest, ":")
	if !ok {
		return mt, acc, 1
	}
	count, err := strconv.Atoi(n)
	if err != nil || count < 1 {
		count = 1
	}
	return mt, acc, count
}
