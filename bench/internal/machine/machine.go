// Package machine describes the machine a benchmark runs on, so a table read later says what
// produced it.
package machine

import (
	"fmt"
	"os"
	"runtime"
	"strings"
)

// CPUModel is the "model name" of /proc/cpuinfo, or "unknown CPU".
func CPUModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "model name") {
			if i := strings.Index(line, ":"); i >= 0 {
				return strings.TrimSpace(line[i+1:])
			}
		}
	}
	return "unknown CPU"
}

// Line is the machine in one line, as the benches' JSON keeps it: CPU model, OS/arch, CPUs,
// Go version.
func Line() string {
	return fmt.Sprintf("%s, %s/%s, %d CPUs, %s", CPUModel(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}
