package kvcache

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/internal/frame"
)

// dialAs is dial with a process identity in the hello.
func dialAs(t testing.TB, addr, role, process string) *Client {
	t.Helper()
	c, err := Dial(ctxT(t), addr, Hello{Role: role, Deployment: "d", Stage: 0, Process: process})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// putFirstHalf sends every put of a 2-layer, n-token prompt but the one that completes it.
func putFirstHalf(t testing.TB, w *Client, req string, n int) {
	t.Helper()
	acks := newAcks()
	require.NoError(t, w.Put(Put{Request: req, Layer: 0, Tokens: [2]int{0, n}, Layout: testLayout, Data: promptData(req, 0, 0, n, testLayout)}, acks.fn()))
	assert.Equal(t, -1, acks.take(t, 1)[0].Step)
}

// putLast completes it.
func putLast(t testing.TB, w *Client, req string, n int) {
	t.Helper()
	acks := newAcks()
	require.NoError(t, w.Put(Put{Request: req, Layer: 1, Tokens: [2]int{0, n}, Layout: testLayout, Data: promptData(req, 1, 0, n, testLayout),
		Last: true, Layers: [2]int{0, 2}}, acks.fn()))
	assert.Equal(t, 0, acks.take(t, 1)[0].Step)
}

// A replacement that reads a replica while the stage it replaces is still streaming it gets
// the rest once it lands, not a prompt cut short (which the router would have recomputed).
func TestAWaitingGetIsHeldUntilAnotherProcesssWriterCompletesThePrompt(t *testing.T) {
	h, addr, _ := holderAt(t, Options{WriterIdle: 5 * time.Second})
	old := dialAs(t, addr, RoleWriter, "old")
	putFirstHalf(t, old, "r", 6)
	go func() {
		time.Sleep(150 * time.Millisecond)
		putLast(t, old, "r", 6)
	}()
	reader := dialAs(t, addr, RoleReader, "new")
	chunks := 0
	start := time.Now()
	end, err := reader.GetAwaiting(ctxT(t), "r", 5*time.Second, func(Chunk) error { chunks++; return nil })
	require.NoError(t, err)
	assert.Equal(t, 0, end.AckedStep, "the prompt completed while the get waited")
	assert.Positive(t, chunks)
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	assert.EqualValues(t, 1, h.Stats().GetWaits)

	// A plain get (no wait) of another incomplete replica answers at once, as before.
	putFirstHalf(t, old, "q", 6)
	end, err = reader.Get(ctxT(t), "q", func(Chunk) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, -1, end.AckedStep)
}

// Nothing to wait for: no other process writes the stage, only the reader's own process
// (the replacement's own writer), or the other writer has gone quiet or away.
func TestAWaitingGetAnswersAtOnceWhenNoOtherWriterIsSending(t *testing.T) {
	const idle = 100 * time.Millisecond
	h, addr, _ := holderAt(t, Options{WriterIdle: idle})
	reader := dialAs(t, addr, RoleReader, "new")
	get := func(req string) (End, time.Duration) {
		start := time.Now()
		end, err := reader.GetAwaiting(ctxT(t), req, 3*time.Second, func(Chunk) error { return nil })
		require.NoError(t, err)
		return end, time.Since(start)
	}

	end, took := get("nobody-writes")
	assert.Equal(t, -1, end.AckedStep)
	assert.Less(t, took, time.Second, "no writer of the stage at all")

	own := dialAs(t, addr, RoleWriter, "new")
	putFirstHalf(t, own, "mine", 4)
	end, took = get("mine")
	assert.Equal(t, -1, end.AckedStep)
	assert.Less(t, took, time.Second, "only the reader's own process writes")

	quiet := dialAs(t, addr, RoleWriter, "old")
	putFirstHalf(t, quiet, "quiet", 4)
	time.Sleep(2 * idle)
	end, took = get("quiet")
	assert.Equal(t, -1, end.AckedStep)
	assert.Less(t, took, time.Second, "the other writer sent nothing for longer than WriterIdle")

	gone := dialAs(t, addr, RoleWriter, "gone")
	putFirstHalf(t, gone, "gone", 4)
	go func() {
		time.Sleep(30 * time.Millisecond)
		_ = gone.Close()
	}()
	end, took = get("gone")
	assert.Equal(t, -1, end.AckedStep)
	assert.Less(t, took, time.Second, "the other writer's connection closed")
	assert.LessOrEqual(t, h.Stats().GetWaits, int64(1), "only the closing writer held a get")
}

// A writer in the middle of a large frame on a slow link is still sending: the get waits for
// the frame that completes the prompt, though no whole frame came for longer than WriterIdle.
func TestAWaitingGetWaitsForAWriterMidFrame(t *testing.T) {
	h, addr, _ := holderAt(t, Options{WriterIdle: 150 * time.Millisecond})
	old := dialAs(t, addr, RoleWriter, "old")
	putFirstHalf(t, old, "big", 6)

	raw, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer raw.Close()
	require.NoError(t, frame.Write(raw, helloMsg{Op: opHello, Role: RoleWriter, Deployment: "d", Stage: 0, Version: frame.Version, Process: "old"}, nil))
	hdr, _, err := frame.NewReader(raw, 1<<20).Next()
	require.NoError(t, err)
	require.Equal(t, opHelloOK, hdr.Op)
	var b bytes.Buffer
	layers := [2]int{0, 2}
	require.NoError(t, frame.Write(&b, putMsg{Op: opPut, Request: "big", Kind: "prompt", Layer: 1, Tokens: [2]int{0, 6}, DType: testLayout.DType,
		Shape: []int{2, testLayout.KVHeads, 6, testLayout.HeadDim}, Last: true, Layers: &layers}, promptData("big", 1, 0, 6, testLayout)))
	frameBytes := b.Bytes()
	go func() { // the frame in 8 pieces over ~0.7 s: never idle for 150 ms, never a whole frame
		piece := (len(frameBytes) + 7) / 8
		for at := 0; at < len(frameBytes); at += piece {
			_, _ = raw.Write(frameBytes[at:min(len(frameBytes), at+piece)])
			time.Sleep(100 * time.Millisecond)
		}
	}()

	reader := dialAs(t, addr, RoleReader, "new")
	start := time.Now()
	end, err := reader.GetAwaiting(ctxT(t), "big", 5*time.Second, func(Chunk) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, 0, end.AckedStep, "the prompt completed by the frame that was still arriving")
	assert.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond)
	assert.EqualValues(t, 1, h.Stats().GetWaits)
}

// A token worker restoring a prompt a prompt worker has yet to send (prompt–token
// disaggregation) asks for it expected: held until the prompt completes, though no writer
// of the stage was sending when the get came; a plain waiting get answers at once.
func TestAnExpectedGetWaitsForAPromptNobodyIsSendingYet(t *testing.T) {
	h, addr, _ := holderAt(t, Options{WriterIdle: 50 * time.Millisecond})
	reader := dialAs(t, addr, RoleReader, "token")

	end, err := reader.GetAwaiting(ctxT(t), "early", 2*time.Second, func(Chunk) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, -1, end.AckedStep, "no writer sends: a plain waiting get is not held")

	go func() {
		time.Sleep(200 * time.Millisecond) // longer than WriterIdle, before the first byte
		w := dialAs(t, addr, RoleWriter, "prompt")
		putFirstHalf(t, w, "r", 5)
		putLast(t, w, "r", 5)
	}()
	start := time.Now()
	chunks := 0
	end, err = reader.GetExpected(ctxT(t), "r", 5*time.Second, func(Chunk) error { chunks++; return nil })
	require.NoError(t, err)
	assert.Equal(t, 0, end.AckedStep, "the whole prompt, once it was sent")
	assert.Positive(t, chunks)
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
	assert.EqualValues(t, 1, h.Stats().GetWaits)

	start = time.Now()
	end, err = reader.GetExpected(ctxT(t), "never", 300*time.Millisecond, func(Chunk) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, -1, end.AckedStep, "a prompt that never comes: answered at the wait's end")
	assert.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)
}
