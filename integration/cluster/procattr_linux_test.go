package cluster

import "syscall"

// procAttr has the kernel SIGKILL a cluster process when the test binary dies (a go test
// timeout exits without running cleanups), so no server or worker outlives the test.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
