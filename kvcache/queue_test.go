package kvcache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFIFOKeepsOrderAndPushesBack(t *testing.T) {
	q := NewFIFO(2)
	require.True(t, q.Push(Item{Step: 1}))
	require.True(t, q.Push(Item{Step: 2}))
	pushed := make(chan bool)
	go func() { pushed <- q.Push(Item{Step: 3}) }()
	select {
	case <-pushed:
		t.Fatal("a full queue took a third item")
	default:
	}
	it, ok := q.Pop()
	require.True(t, ok)
	assert.Equal(t, 1, it.Step)
	assert.True(t, <-pushed, "popping made room")
	for _, want := range []int{2, 3} {
		it, ok := q.Pop()
		require.True(t, ok)
		assert.Equal(t, want, it.Step)
	}
	require.True(t, q.Push(Item{Step: 4}))
	q.Close()
	assert.False(t, q.Push(Item{Step: 5}), "closed")
	it, ok = q.Pop()
	assert.True(t, ok, "items pushed before Close still come out")
	assert.Equal(t, 4, it.Step)
	_, ok = q.Pop()
	assert.False(t, ok)
}
