package kvcache

import (
	"context"
	"hash/fnv"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/internal/wait"
)

// testLayout is small enough to reason about byte by byte: a token of a layer is 32 bytes.
var testLayout = Layout{DType: "bf16", KVHeads: 2, HeadDim: 4}

// holderAt starts a holder on a free TCP port and a unix socket in a temp dir.
func holderAt(t testing.TB, opts Options) (h *Holder, tcp, unix string) {
	t.Helper()
	if opts.Budget == 0 {
		opts.Budget = 1 << 30
	}
	h, err := New(opts)
	require.NoError(t, err)
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	sock := filepath.Join(t.TempDir(), "kv.sock")
	ul, err := ListenUnix(sock)
	require.NoError(t, err)
	go func() { _ = h.Serve(tl) }()
	go func() { _ = h.Serve(ul) }()
	t.Cleanup(func() { _ = h.Close() })
	return h, tl.Addr().String(), sock
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dial(t testing.TB, addr, role, dep string, stage int) *Client {
	t.Helper()
	c, err := Dial(ctxT(t), addr, Hello{Role: role, Deployment: dep, Stage: stage})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// val is the byte at (request, layer, position, kv*heads+head, byte of the row): every byte
// of a test cache is known without storing it.
func val(req string, layer, pos, kh, j int) byte {
	f := fnv.New32a()
	_, _ = f.Write([]byte(req))
	return byte(int(f.Sum32()) + layer*131 + pos*17 + kh*7 + j)
}

// promptData is layer l's tokens [t0,t1) as a put carries them: [2, heads, n, head_dim].
func promptData(req string, l, t0, t1 int, lay Layout) []byte {
	row, n := lay.rowBytes(), t1-t0
	b := make([]byte, 0, lay.tokenBytes()*n)
	for kh := range 2 * lay.KVHeads {
		for t := t0; t < t1; t++ {
			for j := range row {
				b = append(b, val(req, l, t, kh, j))
			}
		}
	}
	return b
}

// stepData is one decode step as put_step carries it: [entries, layers, 2, heads, head_dim].
func stepData(entries []Entry, layers [2]int, lay Layout) []byte {
	var b []byte
	for _, e := range entries {
		for l := layers[0]; l < layers[1]; l++ {
			for kh := range 2 * lay.KVHeads {
				for j := range lay.rowBytes() {
					b = append(b, val(e.Request, l, e.Token, kh, j))
				}
			}
		}
	}
	return b
}

// ackRecorder collects acks from a client's reading goroutine.
type ackRecorder struct{ ch chan Ack }

func newAcks() *ackRecorder          { return &ackRecorder{ch: make(chan Ack, 1<<16)} }
func (r *ackRecorder) fn() func(Ack) { return func(a Ack) { r.ch <- a } }

// take returns the next n acks, failing after a deadline.
func (r *ackRecorder) take(t testing.TB, n int) []Ack {
	t.Helper()
	out := make([]Ack, 0, n)
	deadline := time.After(20 * time.Second)
	for len(out) < n {
		select {
		case a := <-r.ch:
			out = append(out, a)
		case <-deadline:
			t.Fatalf("got %d of %d acks", len(out), n)
		}
	}
	return out
}

// putPrompt sends a request's prompt over layers, tokens [0,n) in two puts per layer, the
// last marked, and waits for its acks.
func putPrompt(t testing.TB, c *Client, req string, layers [2]int, n int, lay Layout) {
	t.Helper()
	acks := newAcks()
	half := n / 2
	count := 0
	for l := layers[0]; l < layers[1]; l++ {
		for _, r := range [][2]int{{0, half}, {half, n}} {
			p := Put{Request: req, Layer: l, Tokens: r, Layout: lay, Data: promptData(req, l, r[0], r[1], lay)}
			if l == layers[1]-1 && r[0] == half {
				p.Last, p.Layers = true, layers
			}
			require.NoError(t, c.Put(p, acks.fn()))
			count++
		}
	}
	for i, a := range acks.take(t, count) {
		require.NoError(t, a.Err)
		if i == count-1 {
			require.Equal(t, 0, a.Step, "the last put completes the prompt at step 0")
		} else {
			require.Equal(t, -1, a.Step)
		}
	}
}

// expectLayer is what a restore of req must give for layer l over tokens [0,n).
func expectLayer(req string, l, n int, lay Layout) []byte { return promptData(req, l, 0, n, lay) }

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	wait.For(t, 20*time.Second, time.Millisecond, cond, "%s", what)
}
