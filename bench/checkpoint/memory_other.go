//go:build !linux

package main

import "os"

// allocState allocates the simulated model state from the Go heap (no huge pages off Linux).
func allocState(n int64) ([]byte, error) { return make([]byte, n), nil }

// freeState leaves the memory to the garbage collector.
func freeState([]byte) {}

// openDirect opens (creating) path; without O_DIRECT the raw baseline includes the page cache.
func openDirect(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
}
