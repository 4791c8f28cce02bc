package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFramesRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, Hello{Op: "hello", Role: "writer", Deployment: "d", Stage: 1, Version: Version}, nil))
	require.NoError(t, Write(&buf, map[string]any{"op": "put", "request": "r1"}, []byte{1, 2, 3}))
	r := NewReader(&buf, 1<<20)
	h, p, err := r.Next()
	require.NoError(t, err)
	assert.Equal(t, "hello", h.Op)
	assert.Nil(t, p)
	var hello Hello
	require.NoError(t, h.Decode(&hello))
	assert.Equal(t, "d", hello.Deployment)
	h, p, err = r.Next()
	require.NoError(t, err)
	assert.Equal(t, "put", h.Op)
	assert.Equal(t, []byte{1, 2, 3}, p)
	_, _, err = r.Next()
	assert.ErrorIs(t, err, io.EOF, "a clean end between frames")
}

func TestTheLayoutIsTheDocumentedOne(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, map[string]string{"op": "ping"}, []byte("xy")))
	b := buf.Bytes()
	hl := binary.BigEndian.Uint32(b[:4])
	assert.Equal(t, `{"op":"ping"}`, string(b[4:4+hl]))
	assert.Equal(t, uint64(2), binary.BigEndian.Uint64(b[4+hl:12+hl]))
	assert.Equal(t, "xy", string(b[12+hl:]))
}

func TestBadFramesAreRefused(t *testing.T) {
	var big bytes.Buffer
	require.NoError(t, Write(&big, map[string]string{"op": "put"}, make([]byte, 100)))
	_, _, err := NewReader(&big, 10).Next()
	assert.True(t, errors.Is(err, ErrTooLarge), "%v", err)

	var noOp bytes.Buffer
	require.NoError(t, Write(&noOp, map[string]string{"x": "y"}, nil))
	_, _, err = NewReader(&noOp, 10).Next()
	assert.ErrorContains(t, err, "op")

	var cut bytes.Buffer
	require.NoError(t, Write(&cut, map[string]string{"op": "put"}, []byte("abcdef")))
	_, _, err = NewReader(bytes.NewReader(cut.Bytes()[:cut.Len()-2]), 100).Next()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)

	var huge [4]byte
	binary.BigEndian.PutUint32(huge[:], MaxHeader+1)
	_, _, err = NewReader(bytes.NewReader(huge[:]), 100).Next()
	assert.True(t, errors.Is(err, ErrTooLarge))
}
