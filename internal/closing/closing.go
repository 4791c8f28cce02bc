// Package closing is the start of a Close that may be called more than once, and from more
// than one goroutine.
package closing

import "sync"

// Begin locks mu and marks *closed, which mu guards. It reports whether this is the first
// Close: if not, mu is unlocked again and the caller returns at once; if so, mu stays locked
// for the caller to finish what needs it.
func Begin(mu sync.Locker, closed *bool) bool {
	mu.Lock()
	if *closed {
		mu.Unlock()
		return false
	}
	*closed = true
	return true
}
