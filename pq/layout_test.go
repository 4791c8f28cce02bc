package pq

import (
	"reflect"
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

// TestQueueHotFieldsAlone: the Queue fields every operation reads lie at least two cache lines
// away from every other field and from the start of the struct (whatever precedes it in
// memory), so that no aligned pair of lines holds both. The other fields are written while
// operations run: the controller's window verdict and counts every window, Stats' mutex by
// its readers, the control mutex by Force. Before this test the switch clock that every
// operation loads shared a line with the mutex and the Features the controller writes every
// window.
func TestQueueHotFieldsAlone(t *testing.T) {
	hot := map[string]bool{"mq": true, "ctr": true, "del": true, "mode": true, "sample": true, "sw": true}
	for _, typ := range []reflect.Type{reflect.TypeFor[Queue[int, int]](), reflect.TypeFor[Queue[string, [40]byte]]()} {
		lo, hi := typ.Size(), uintptr(0)
		for i := range typ.NumField() {
			if f := typ.Field(i); hot[f.Name] {
				lo, hi = min(lo, f.Offset), max(hi, f.Offset+f.Type.Size())
			}
		}
		if lo < 2*cacheLine {
			t.Errorf("%v: the per-operation fields start %d bytes into the struct, want at least %d", typ, lo, 2*cacheLine)
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			if hot[f.Name] || f.Name == "_" {
				continue
			}
			if f.Offset+f.Type.Size()+2*cacheLine > lo && f.Offset < hi+2*cacheLine {
				t.Errorf("%v: field %s at [%d, %d) is within %d bytes of the per-operation fields at [%d, %d)",
					typ, f.Name, f.Offset, f.Offset+f.Type.Size(), 2*cacheLine, lo, hi)
			}
		}
	}
	// The switch clock is in the hot block whole: it must hold only what operations read.
	if n := unsafe.Sizeof(switchClock{}); n != 16 {
		t.Errorf("switchClock is %d bytes, want 16 (at and target): anything written elsewhere belongs in switchStats", n)
	}
}
