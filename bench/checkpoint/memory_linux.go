//go:build linux

package main

import (
	"fmt"
	"os"
	"syscall"
)

// allocState maps n bytes for the simulated model state with transparent huge pages, as pinned
// host memory for GPU copies would be; 4 KiB Go heap pages would make the copy (and this VM's
// page faults) dominate what is being measured.
func allocState(n int64) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("mapping %d bytes of state: %w", n, err)
	}
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
	return b, nil
}

// freeState unmaps memory from allocState.
func freeState(b []byte) { _ = syscall.Munmap(b) }

// openDirect opens (creating) path for O_DIRECT writes over its existing blocks.
func openDirect(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_DIRECT, 0o644)
}
