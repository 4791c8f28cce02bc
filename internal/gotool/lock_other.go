//go:build !unix

package gotool

// lockFile does not lock where flock is missing: concurrent test binaries may then build
// a tool side by side, and the last one's rename wins.
func lockFile(string) (unlock func(), err error) { return func() {}, nil }
