package router

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Both queues give the same order: lowest key first, arrival order among equal keys.
func TestPQueueOrdersAsTheHeapDoes(t *testing.T) {
	keys := []int64{5, 3, 9, 3, 1, 5, 5, 0, 9}
	for name, q := range map[string]Queue{"heap": NewHeapQueue(), "pq": NewPQueue()} {
		for i, k := range keys {
			q.Push(Item{Key: k, Value: i})
		}
		assert.Equal(t, len(keys), q.Len(), name)
		var got []Item
		for {
			it, ok := q.Pop()
			if !ok {
				break
			}
			got = append(got, it)
		}
		want := []Item{{0, 7}, {1, 4}, {3, 1}, {3, 3}, {5, 0}, {5, 5}, {5, 6}, {9, 2}, {9, 8}}
		assert.Equal(t, want, got, name)
		if c, ok := q.(interface{ Close() }); ok {
			c.Close()
		}
	}
}

func TestEachRouterGetsItsOwnQueueAndClosesIt(t *testing.T) {
	made := []*closeCounter{}
	opts := Options{Model: "m", NewQueue: func() Queue {
		c := &closeCounter{Queue: NewHeapQueue()}
		made = append(made, c)
		return c
	}}
	a, err := New(opts)
	require.NoError(t, err)
	b, err := New(opts)
	require.NoError(t, err)
	require.Len(t, made, 2)
	assert.NotSame(t, made[0], made[1])
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	assert.Equal(t, 1, made[0].closed)
	assert.Equal(t, 1, made[1].closed)
}

type closeCounter struct {
	Queue
	closed int
}

func (c *closeCounter) Close() { c.closed++ }
