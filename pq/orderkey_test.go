package pq

import (
	"cmp"
	"math"
	"slices"
	"testing"
)

// checkMonotone asserts a < b ⇒ hint(a) <= hint(b) over every pair of keys.
func checkMonotone[K cmp.Ordered](t *testing.T, keys []K) {
	t.Helper()
	h := newHint[K]()
	slices.SortFunc(keys, cmp.Compare[K])
	for i := 1; i < len(keys); i++ {
		if cmp.Less(keys[i-1], keys[i]) && h(keys[i-1]) > h(keys[i]) {
			t.Errorf("%T: %v < %v but hints %d > %d", keys[0], keys[i-1], keys[i], h(keys[i-1]), h(keys[i]))
		}
	}
}

type prio int16

func TestHintMonotone(t *testing.T) {
	checkMonotone(t, []int{math.MinInt, -5, -1, 0, 1, 7, math.MaxInt})
	checkMonotone(t, []int8{-128, -1, 0, 1, 127})
	checkMonotone(t, []prio{-300, -1, 0, 2, 300})
	checkMonotone(t, []uint32{0, 1, 1 << 31, math.MaxUint32})
	checkMonotone(t, []uint64{0, 1, 1 << 63, math.MaxUint64})
	checkMonotone(t, []float64{math.NaN(), math.Inf(-1), -1e300, -1, -1e-300, 0, 1e-300, 2.5, math.Inf(1)})
	checkMonotone(t, []float32{-3, -0.5, 0, 0.25, 9})
	checkMonotone(t, []string{"", "a", "ab", "abcdefgh", "abcdefghi", "b", "\xff"})
	if h := newHint[int](); h(1)-h(-1) != 2 {
		t.Errorf("int hints should preserve distances: got %d", h(1)-h(-1))
	}
}
