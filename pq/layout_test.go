package pq

import (
	"testing"
	"unsafe"
)

// TestPadding: the padded structures fill whole pairs of cache lines, so that neighbours in
// an array never share one; a field added without adjusting the pad fails here.
func TestPadding(t *testing.T) {
	if n := unsafe.Sizeof(shard[int, int]{}); n != 2*cacheLine {
		t.Errorf("shard is %d bytes, want %d", n, 2*cacheLine)
	}
	if n := unsafe.Sizeof(stripe{}); n != 2*cacheLine {
		t.Errorf("stripe is %d bytes, want %d", n, 2*cacheLine)
	}
	if off := unsafe.Offsetof(slot[int, int]{}.state); off < 2*cacheLine {
		t.Errorf("a slot's state word is %d bytes from the previous slot's fields, want at least %d", off, 2*cacheLine)
	}
}
