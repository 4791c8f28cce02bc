package pq

import (
	"container/heap"
	"testing"
)

// refItem is a reference entry: the key and the operation number that inserted it, which
// is also the value given to the queue.
type refItem struct{ key, seq int }

// refHeap is the reference: container/heap ordered by key, then insertion (FIFO among
// equal keys, as a one-shard queue promises).
type refHeap []refItem

func (h refHeap) Len() int { return len(h) }
func (h refHeap) Less(i, j int) bool {
	if h[i].key != h[j].key {
		return h[i].key < h[j].key
	}
	return h[i].seq < h[j].seq
}
func (h refHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *refHeap) Push(x any)   { *h = append(*h, x.(refItem)) }
func (h *refHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// FuzzQueue replays a byte string as a sequential operation sequence against the queue and
// container/heap. The first byte picks the configuration: strict (one shard) or relaxed,
// direct or delegated. Strict queues must match the reference exactly, values included
// (FIFO among equal keys); relaxed ones must return a present item and agree on emptiness
// and length; delegation must change none of it. Each later byte is an operation: even
// inserts key b/2 with the operation's number as value, odd deletes.
func FuzzQueue(f *testing.F) {
	f.Add([]byte{0, 10, 4, 1, 1, 1})
	f.Add([]byte{1, 200, 2, 2, 2, 1, 7, 1, 1, 9})
	f.Add([]byte{2, 6, 6, 6, 1, 8, 1, 1, 1, 1})
	f.Add([]byte{3, 254, 0, 128, 1, 3, 5, 100, 1, 1, 1, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		strict := data[0]&1 == 0
		mode := Direct
		if data[0]&2 != 0 {
			mode = Delegate
		}
		shards := 1
		if !strict {
			shards = 4
		}
		q := New[int, int](Options{Mode: mode, Shards: shards, Servers: 1, NoPin: true})
		defer q.Close()
		var ref refHeap
		keyOf := map[int]int{} // value -> key of the items present, for the relaxed check
		for i, b := range data[1:] {
			if b&1 == 0 {
				k := int(b >> 1)
				q.Insert(k, i)
				heap.Push(&ref, refItem{k, i})
				keyOf[i] = k
			} else {
				k, v, ok := q.DeleteMin()
				if ok != (ref.Len() > 0) {
					t.Fatalf("op %d: DeleteMin ok=%v with %d items in the reference", i, ok, ref.Len())
				}
				if !ok && (k != 0 || v != 0) {
					t.Fatalf("op %d: empty DeleteMin returned (%d, %d), want zero values", i, k, v)
				}
				if ok {
					if kk, present := keyOf[v]; !present || kk != k {
						t.Fatalf("op %d: DeleteMin = (%d, %d), not in the queue", i, k, v)
					}
					delete(keyOf, v)
					if strict {
						if want := heap.Pop(&ref).(refItem); k != want.key || v != want.seq {
							t.Fatalf("op %d: DeleteMin = (%d, %d), want (%d, %d)", i, k, v, want.key, want.seq)
						}
					} else {
						removeSeq(&ref, v)
					}
				}
			}
			if q.Len() != ref.Len() {
				t.Fatalf("op %d: Len %d, want %d", i, q.Len(), ref.Len())
			}
		}
	})
}

// removeSeq deletes the item inserted by operation seq from the reference heap.
func removeSeq(h *refHeap, seq int) {
	for i, x := range *h {
		if x.seq == seq {
			heap.Remove(h, i)
			return
		}
	}
}
