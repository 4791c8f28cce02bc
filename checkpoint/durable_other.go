//go:build !linux

package checkpoint

import (
	"fmt"
	"os"
	"unsafe"
)

// directIOSupported is false off Linux: data files are always written through the page cache.
const directIOSupported = false

// openData opens a slot's data file for buffered writing (no O_DIRECT on this platform).
func openData(path string, _ bool) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("opening %s: %w", path, err)
	}
	return f, false, nil
}

// fdatasync falls back to a full fsync where fdatasync is not available.
func fdatasync(f *os.File) error {
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", f.Name(), err)
	}
	return nil
}

// preallocate extends f to size bytes (sparse) where fallocate is not available.
func preallocate(f *os.File, size int64) error {
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("extending %s to %d bytes: %w", f.Name(), size, err)
	}
	return nil
}

// alignedAlloc returns n bytes aligned to blockAlign from the Go heap.
func alignedAlloc(n int) ([]byte, func() error, error) {
	raw := make([]byte, n+blockAlign)
	shift := 0
	if r := int(uintptr(unsafe.Pointer(&raw[0])) % blockAlign); r != 0 {
		shift = blockAlign - r
	}
	return raw[shift : shift+n : shift+n], func() error { return nil }, nil
}

// lockDir is a no-op off Linux: callers must not open one directory twice.
func lockDir(string) (func() error, error) { return func() error { return nil }, nil }
