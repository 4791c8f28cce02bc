package seqheap

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPopsByKeyThenInPushOrder(t *testing.T) {
	type kv struct{ k, v int }
	q := New(func(a, b kv) bool { return a.k < b.k })
	_, ok := q.Pop()
	require.False(t, ok)
	for i, k := range []int{3, 1, 2, 1, 3, 1} {
		q.Push(kv{k, i})
	}
	top, ok := q.Peek()
	require.True(t, ok)
	require.Equal(t, kv{1, 1}, top)
	var got []kv
	for q.Len() > 0 {
		v, _ := q.Pop()
		got = append(got, v)
	}
	require.Equal(t, []kv{{1, 1}, {1, 3}, {1, 5}, {2, 2}, {3, 0}, {3, 4}}, got)
}
