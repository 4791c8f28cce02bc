package kvcache

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests write and read the bytes of docs/serving-protocol.md by hand, without the
// client or internal/frame, so the holder and the Python worker agree on them.

// rawFrame is one frame as the doc lays it out.
func rawFrame(header string, payload []byte) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, uint32(len(header)))
	b.WriteString(header)
	_ = binary.Write(&b, binary.BigEndian, uint64(len(payload)))
	b.Write(payload)
	return b.Bytes()
}

// readRaw reads one frame by hand.
func readRaw(t *testing.T, r io.Reader) (string, []byte) {
	t.Helper()
	var hl uint32
	require.NoError(t, binary.Read(r, binary.BigEndian, &hl))
	h := make([]byte, hl)
	_, err := io.ReadFull(r, h)
	require.NoError(t, err)
	var pl uint64
	require.NoError(t, binary.Read(r, binary.BigEndian, &pl))
	p := make([]byte, pl)
	_, err = io.ReadFull(r, p)
	require.NoError(t, err)
	return string(h), p
}

func rawConn(t *testing.T, addr, hello string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Write(rawFrame(hello, nil))
	require.NoError(t, err)
	h, _ := readRaw(t, c)
	require.Equal(t, `{"op":"hello_ok","version":1}`, h)
	return c
}

func f32s(vs ...float32) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, vs)
	return b.Bytes()
}

func TestTheBytesOfSection3(t *testing.T) {
	_, addr, _ := holderAt(t, Options{})
	c := rawConn(t, addr, `{"op":"hello","role":"writer","deployment":"d1","stage":0,"version":1}`)
	send := func(h string, p []byte) {
		_, err := c.Write(rawFrame(h, p))
		require.NoError(t, err)
	}
	expect := func(want string) []byte {
		h, p := readRaw(t, c)
		assert.JSONEq(t, want, h)
		return p
	}
	// One layer (3), one KV head, head_dim 2, f32: a token of the layer is K[2] then V[2].
	// Prompt of 2 tokens: [2, kv_heads=1, tokens=2, head_dim=2] = K(t0) K(t1) V(t0) V(t1).
	send(`{"op":"put","request":"r1","kind":"prompt","layer":3,"tokens":[0,2],"dtype":"f32","shape":[2,1,2,2],"last":true,"layers":[3,4]}`,
		f32s(1, 2, 3, 4, 10, 20, 30, 40))
	expect(`{"op":"ack","request":"r1","step":0,"layer":3,"tokens":[0,2]}`)
	// Step 1 for r1 at token 2: [entries=1, layers=1, 2, kv_heads=1, head_dim=2] = K then V.
	send(`{"op":"put_step","step":1,"entries":[{"request":"r1","token":2}],"layers":[3,4],"dtype":"f32","shape":[1,1,2,1,2]}`,
		f32s(5, 6, 50, 60))
	expect(`{"op":"ack","request":"r1","step":1}`)
	// A step for a request the holder has no prompt of: a per-request error, the connection goes on.
	send(`{"op":"put_step","step":1,"entries":[{"request":"nope","token":0}],"layers":[3,4],"dtype":"f32","shape":[1,1,2,1,2]}`,
		f32s(0, 0, 0, 0))
	h, _ := readRaw(t, c)
	var e struct {
		Op, Code, Request string
		Step              int
	}
	require.NoError(t, json.Unmarshal([]byte(h), &e))
	assert.Equal(t, "error", e.Op)
	assert.Equal(t, "conflict", e.Code)
	assert.Equal(t, "nope", e.Request)
	assert.Equal(t, 1, e.Step)

	// get: one chunk [layers=1, 2, kv_heads=1, tokens=3, head_dim=2] = K(t0..t2) V(t0..t2).
	send(`{"op":"get","request":"r1"}`, nil)
	p := expect(`{"op":"chunk","request":"r1","layers":[3,4],"tokens":[0,3],"dtype":"f32","shape":[1,2,1,3,2]}`)
	assert.Equal(t, f32s(1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60), p)
	expect(`{"op":"end","request":"r1","acked_step":1}`)

	send(`{"op":"list"}`, nil)
	expect(`{"op":"held","requests":[{"request":"r1","acked_step":1,"bytes":48}]}`)
	send(`{"op":"get","request":"unknown"}`, nil)
	expect(`{"op":"end","request":"unknown","acked_step":-1}`)
	send(`{"op":"drop","request":"r1"}`, nil)
	expect(`{"op":"dropped","request":"r1","requests":1,"bytes":48}`)
	send(`{"op":"drop_deployment"}`, nil)
	expect(`{"op":"dropped","deployment":"d1","requests":0,"bytes":0}`)
}

func TestAWriterThatDiesMidFrameLeavesNoPartialStep(t *testing.T) {
	h, addr, _ := holderAt(t, Options{})
	w := dial(t, addr, RoleWriter, "d", 0)
	layers := [2]int{0, 2}
	putPrompt(t, w, "r", layers, 3, testLayout)
	require.NoError(t, w.Close())

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	_, err = c.Write(rawFrame(`{"op":"hello","role":"writer","deployment":"d","stage":0,"version":1}`, nil))
	require.NoError(t, err)
	readRaw(t, c)
	step := func(k int) []byte {
		e := []Entry{{"r", 3 + k - 1, nil}}
		hdr, _ := json.Marshal(putStepMsg{Op: opPutStep, Step: k, Entries: []entryMsg{{"r", e[0].Token, nil}}, Layers: layers, DType: "bf16", Shape: []int{1, 2, 2, 2, 4}})
		return rawFrame(string(hdr), stepData(e, layers, testLayout))
	}
	whole, cut := step(1), step(2)
	_, err = c.Write(append(whole, cut[:len(cut)-5]...))
	require.NoError(t, err)
	ack, _ := readRaw(t, c)
	assert.JSONEq(t, `{"op":"ack","request":"r","step":1}`, ack)
	require.NoError(t, c.Close())
	eventually(t, "the holder to let the connection go", func() bool { return h.Stats().Connections == 0 })

	rd := dial(t, addr, RoleReader, "d", 0)
	res, err := rd.Restore(ctxT(t), "r")
	require.NoError(t, err)
	assert.Equal(t, 1, res.AckedStep, "step 2 never arrived whole")
	assert.Equal(t, 4, res.Tokens)
	assert.Equal(t, expectLayer("r", 1, 4, testLayout), res.Layers[1].Data)
	assert.Equal(t, int64(4*2*testLayout.tokenBytes()), h.Stats().BytesHeld)
}

func TestMalformedFramesAreBadRequestsThatCloseTheConnection(t *testing.T) {
	_, addr, _ := holderAt(t, Options{MaxPayload: 1024})
	const hello = `{"op":"hello","role":"writer","deployment":"d","stage":0,"version":1}`
	for name, f := range map[string][]byte{
		"unknown op":         rawFrame(`{"op":"teleport"}`, nil),
		"payload over limit": rawFrame(`{"op":"put_step"}`, make([]byte, 2048)),
		"shape and payload":  rawFrame(`{"op":"put","request":"r","kind":"prompt","layer":0,"tokens":[0,1],"dtype":"f32","shape":[2,1,1,2]}`, make([]byte, 4)),
		"unknown dtype":      rawFrame(`{"op":"put","request":"r","kind":"prompt","layer":0,"tokens":[0,1],"dtype":"int4","shape":[2,1,1,2]}`, nil),
		"huge shape":         rawFrame(`{"op":"put_step","step":1,"entries":[{"request":"r","token":0}],"layers":[0,1],"dtype":"f32","shape":[1,1,2,4294967296,4294967296]}`, nil),
	} {
		t.Run(name, func(t *testing.T) {
			c := rawConn(t, addr, hello)
			_, err := c.Write(f)
			require.NoError(t, err)
			h, _ := readRaw(t, c)
			assert.Contains(t, h, `"code":"bad_request"`)
			_, err = c.Read(make([]byte, 1))
			assert.ErrorIs(t, err, io.EOF, "the holder closed the connection")
		})
	}
	t.Run("version", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Write(rawFrame(`{"op":"hello","role":"writer","deployment":"d","stage":0,"version":2}`, nil))
		require.NoError(t, err)
		h, _ := readRaw(t, c)
		assert.Contains(t, h, `"code":"version"`)
	})
	t.Run("role", func(t *testing.T) {
		_, err := Dial(ctxT(t), addr, Hello{Role: "router", Deployment: "d"})
		assert.ErrorIs(t, err, ErrBadRequest)
	})
}
