package pq

import (
	"cmp"
	"math"
	"reflect"
	"unsafe"
)

// hintFunc maps a key to a uint64 such that a < b implies hint(a) <= hint(b). The MultiQueue
// publishes each sub-queue's minimum as such a hint in an atomic word, so DeleteMin can compare
// two sub-queues without locking either and without a data race; a tie between hints only
// costs the choice some quality, never correctness, because the pop itself runs under the lock
// on the real keys. The same hints measure the key range for the mode classifier.
type hintFunc[K cmp.Ordered] func(K) uint64

// newHint picks the mapping once, from the key's kind, so named types (type Prio int32) work
// and the per-operation cost is a load and a few bit operations.
func newHint[K cmp.Ordered]() hintFunc[K] {
	var zero K
	switch reflect.TypeOf(zero).Kind() {
	case reflect.Int, reflect.Int64:
		if unsafe.Sizeof(zero) == 8 {
			return func(k K) uint64 { return uint64(*(*int64)(unsafe.Pointer(&k))) ^ 1<<63 }
		}
		return func(k K) uint64 { return uint64(int64(*(*int32)(unsafe.Pointer(&k)))) ^ 1<<63 }
	case reflect.Int32:
		return func(k K) uint64 { return uint64(int64(*(*int32)(unsafe.Pointer(&k)))) ^ 1<<63 }
	case reflect.Int16:
		return func(k K) uint64 { return uint64(int64(*(*int16)(unsafe.Pointer(&k)))) ^ 1<<63 }
	case reflect.Int8:
		return func(k K) uint64 { return uint64(int64(*(*int8)(unsafe.Pointer(&k)))) ^ 1<<63 }
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		if unsafe.Sizeof(zero) == 8 {
			return func(k K) uint64 { return *(*uint64)(unsafe.Pointer(&k)) }
		}
		return func(k K) uint64 { return uint64(*(*uint32)(unsafe.Pointer(&k))) }
	case reflect.Uint32:
		return func(k K) uint64 { return uint64(*(*uint32)(unsafe.Pointer(&k))) }
	case reflect.Uint16:
		return func(k K) uint64 { return uint64(*(*uint16)(unsafe.Pointer(&k))) }
	case reflect.Uint8:
		return func(k K) uint64 { return uint64(*(*uint8)(unsafe.Pointer(&k))) }
	case reflect.Float64:
		return func(k K) uint64 { return floatHint(*(*float64)(unsafe.Pointer(&k))) }
	case reflect.Float32:
		return func(k K) uint64 { return floatHint(float64(*(*float32)(unsafe.Pointer(&k)))) }
	case reflect.String:
		return func(k K) uint64 { return stringHint(*(*string)(unsafe.Pointer(&k))) }
	}
	return func(K) uint64 { return 0 } // unreachable for cmp.Ordered; all ties is still correct
}

// floatHint orders floats as cmp.Less does: NaN first, then -Inf ... +Inf. Flipping all bits
// of a negative float and only the sign bit of a positive one makes the IEEE bit patterns
// sort as unsigned integers.
func floatHint(f float64) uint64 {
	if f != f {
		return 0
	}
	b := math.Float64bits(f)
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}

// stringHint is the first eight bytes, big-endian: monotone, not injective.
func stringHint(s string) uint64 {
	var h uint64
	for i := 0; i < 8; i++ {
		h <<= 8
		if i < len(s) {
			h |= uint64(s[i])
		}
	}
	return h
}
