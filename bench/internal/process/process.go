// Package process measures what the benchmark's own process used, so benches report it the
// same way.
package process

import "syscall"

// CPUSeconds is the user plus system CPU time the process used since it began.
func CPUSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// PeakRSSKiB is the process's maximum resident set in KiB (what Linux reports).
func PeakRSSKiB() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return int64(ru.Maxrss)
}
