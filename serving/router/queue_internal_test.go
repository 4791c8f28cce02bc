package router

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHeapQueueOrdersByKeyThenArrival(t *testing.T) {
	q := NewHeapQueue()
	for i, k := range []int64{5, 1, 5, 3, 1} {
		q.Push(Item{Key: k, Value: i})
	}
	assert.Equal(t, 5, q.Len())
	var got []int
	for {
		it, ok := q.Pop()
		if !ok {
			break
		}
		got = append(got, it.Value.(int))
	}
	assert.Equal(t, []int{1, 4, 3, 0, 2}, got)
}

func TestCompleteUTF8HoldsBackPartialCharacters(t *testing.T) {
	e := []byte("é€") // 2 + 3 bytes
	ready, rest := completeUTF8(e[:1])
	assert.Empty(t, ready)
	assert.Equal(t, e[:1], rest)
	ready, rest = completeUTF8(e[:4])
	assert.Equal(t, "é", string(ready))
	assert.Equal(t, e[2:4], rest)
	ready, rest = completeUTF8(e)
	assert.Equal(t, "é€", string(ready))
	assert.Empty(t, rest)
	ready, rest = completeUTF8([]byte{'a', 0xff})
	assert.Equal(t, []byte{'a', 0xff}, ready, "invalid bytes are not held back")
	assert.Empty(t, rest)
	assert.Equal(t, []byte("hé"), Bytes{}.Decode(nil, Bytes{}.Encode("hé")))
}

func TestCompactDropsCancelledRequests(t *testing.T) {
	r, err := New(Options{Model: "m", MaxQueue: 2})
	assert.NoError(t, err)
	defer r.Close()
	a := &request{id: "a", notify: make(chan struct{}, 1), key: 1}
	b := &request{id: "b", notify: make(chan struct{}, 1), key: 2}
	c := &request{id: "c", notify: make(chan struct{}, 1), key: 3}
	assert.Nil(t, r.admit(a))
	assert.Nil(t, r.admit(b))
	assert.NotNil(t, r.admit(c), "full")
	r.cancelRequest(a)
	assert.Nil(t, r.admit(c), "a's slot is free again")
	assert.Equal(t, 2, r.opts.Queue.Len(), "the tombstone was compacted away")
	assert.Equal(t, 2, r.Status().Waiting)
}
