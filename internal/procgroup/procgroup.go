//go:build unix

// Package procgroup stops a child that runs in its own process group (started with
// Setpgid), the way schooner stops every program it supervises (a command trainer, an
// inference worker): SIGTERM to the whole group so the program can save or drain, then
// SIGKILL to what is left once the grace has passed.
package procgroup

import (
	"syscall"
	"time"
)

// Terminate sends the process group of pid SIGTERM and, unless exited closes within grace,
// SIGKILL. It reports whether the group had to be killed; it does not wait for the exit after
// a SIGKILL.
func Terminate(pid int, grace time.Duration, exited <-chan struct{}) (killed bool) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
		return false
	case <-t.C:
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	return true
}
