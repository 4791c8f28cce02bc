package fakestage_test

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/internal/frame"
	"github.com/schooner-ml/schooner/serving/router/fakestage"
)

// echo accepts every submit and records cancels.
type echo struct{ cancels chan string }

func (echo) Load() map[string]int { return map[string]int{"running": 1} }

func (e echo) Submit(c *fakestage.Conn, h frame.Header) error {
	var s fakestage.Submit
	if err := h.Decode(&s); err != nil {
		return err
	}
	return c.Write(fakestage.Accepted(s.Request))
}

func (e echo) Cancel(id string) { e.cancels <- id }

func dial(t *testing.T, w *fakestage.Worker, hello frame.Hello) (net.Conn, *frame.Reader) {
	t.Helper()
	nc, err := net.Dial("tcp", w.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	hello.Op = "hello"
	require.NoError(t, frame.Write(nc, hello, nil))
	return nc, frame.NewReader(nc, 0)
}

func next(t *testing.T, fr *frame.Reader, v any) string {
	t.Helper()
	h, _, err := fr.Next()
	require.NoError(t, err)
	require.NoError(t, h.Decode(v))
	return h.Op
}

func start(t *testing.T) (*fakestage.Worker, echo) {
	t.Helper()
	w, err := fakestage.Listen()
	require.NoError(t, err)
	m := echo{cancels: make(chan string, 1)}
	w.Serve(m)
	t.Cleanup(w.Close)
	return w, m
}

// A router's hello is answered, pings report the model's load, submits and cancels reach
// the model, and an unknown op is a bad request that ends the connection.
func TestWorkerSpeaksSectionOneToARouter(t *testing.T) {
	w, m := start(t)
	nc, fr := dial(t, w, frame.Hello{Role: "router", Version: frame.Version, Deployment: "d"})
	var ok struct{ Version int }
	require.Equal(t, "hello_ok", next(t, fr, &ok))
	assert.Equal(t, frame.Version, ok.Version)

	require.NoError(t, frame.Write(nc, map[string]any{"op": "ping"}, nil))
	var pong struct{ Load map[string]int }
	require.Equal(t, "pong", next(t, fr, &pong))
	assert.Equal(t, map[string]int{"running": 1}, pong.Load)

	require.NoError(t, frame.Write(nc, map[string]any{"op": "submit", "request": "r1", "max_tokens": 3}, nil))
	var reply fakestage.Reply
	require.Equal(t, "accepted", next(t, fr, &reply))
	assert.Equal(t, "r1", reply.Request)

	require.NoError(t, frame.Write(nc, map[string]any{"op": "cancel", "request": "r1"}, nil))
	assert.Equal(t, "r1", <-m.cancels)

	require.NoError(t, frame.Write(nc, map[string]any{"op": "frobnicate"}, nil))
	var e frame.Error
	require.Equal(t, "error", next(t, fr, &e))
	assert.Equal(t, "bad_request", e.Code)
	_, _, err := fr.Next()
	assert.Error(t, err, "the worker hung up")

	assert.Equal(t, "d", w.Hellos()[0].Deployment)
	assert.NotNil(t, w.Latest())
}

// A hello from anything but a router of this protocol version is refused and recorded.
func TestWorkerRefusesAnotherRole(t *testing.T) {
	w, _ := start(t)
	_, fr := dial(t, w, frame.Hello{Role: "stage", Version: frame.Version})
	var e frame.Error
	require.Equal(t, "error", next(t, fr, &e))
	assert.Equal(t, "bad_request", e.Code)
	_, _, err := fr.Next()
	assert.Error(t, err)
	assert.Equal(t, "stage", w.Hellos()[0].Role)
}
