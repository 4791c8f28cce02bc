package pq

import (
	"slices"
	"testing"
)

func TestOccupancyVisitsEverySetBitOnceFromStart(t *testing.T) {
	o := newOccupancy(200) // four words, the last one partly used
	set := []int{0, 5, 63, 64, 130, 199}
	for _, i := range set {
		o.mark(i, true)
	}
	o.mark(7, true)
	o.mark(7, false) // set and cleared again
	for _, start := range []int{0, 5, 6, 63, 64, 100, 199} {
		var got []int
		o.each(start, func(i int) bool { got = append(got, i); return false })
		var want []int
		for d := range 200 {
			if i := (start + d) % 200; slices.Contains(set, i) {
				want = append(want, i)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("from %d: visited %v, want %v", start, got, want)
		}
	}
	var got []int
	if !o.each(70, func(i int) bool { got = append(got, i); return i == 199 }) || !slices.Equal(got, []int{130, 199}) {
		t.Errorf("each did not stop at the first shard try took: %v", got)
	}
	if newOccupancy(64).each(3, func(int) bool { return true }) {
		t.Error("an empty occupancy visited a shard")
	}
}

// TestOccupancyFollowsTheShards: after any sequence of operations the bits are exactly the
// non-empty shards, and a sparse queue's DeleteMin finds items wherever they are.
func TestOccupancyFollowsTheShards(t *testing.T) {
	m := newMultiQueue[int, int](70)
	for i := range 500 {
		m.insert(i, i, uint64(i)*0x9e3779b97f4a7c15)
		if i%3 == 0 {
			m.deleteMin(uint64(i) * 0xbf58476d1ce4e5b9)
		}
	}
	check := func() {
		t.Helper()
		for i := range m.shards {
			bit := m.occ.words[i/64].bits.Load()>>(i%64)&1 == 1
			if bit != (m.shards[i].h.len() > 0) {
				t.Fatalf("shard %d: bit %v, %d items", i, bit, m.shards[i].h.len())
			}
		}
	}
	check()
	n := m.len()
	for range n {
		if _, _, ok := m.deleteMin(0); !ok {
			t.Fatalf("DeleteMin reported empty with %d items left", m.len())
		}
	}
	check()
	if _, _, ok := m.deleteMin(1); ok || m.len() != 0 {
		t.Fatalf("the drained queue still gave an item (len %d)", m.len())
	}
}
