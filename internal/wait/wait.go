// Package wait is how tests wait for something to happen: they poll a condition with a
// deadline and never sleep blindly.
package wait

import (
	"fmt"
	"testing"
	"time"
)

// For polls cond every interval until it holds; once within has passed without it, the test
// fails at once, saying what it waited for (format and args).
func For(t testing.TB, within, every time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, fmt.Sprintf(format, args...))
		}
		time.Sleep(every)
	}
}

// Recv is the next value from ch; once within has passed without one, the test fails at once,
// saying what it waited for (format and args).
func Recv[T any](t testing.TB, ch <-chan T, within time.Duration, format string, args ...any) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within):
		t.Fatalf("timed out after %s waiting for %s", within, fmt.Sprintf(format, args...))
		panic("unreachable")
	}
}
