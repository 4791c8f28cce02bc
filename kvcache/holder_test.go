package kvcache

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeSteps sends steps first..last for reqs (each with prompt of n tokens), one frame per
// step, and checks every ack.
func writeSteps(t testing.TB, c *Client, reqs []string, layers [2]int, n, first, last int, lay Layout) {
	t.Helper()
	acks := newAcks()
	for k := first; k <= last; k++ {
		entries := make([]Entry, len(reqs))
		for i, r := range reqs {
			entries[i] = Entry{Request: r, Token: n + k - 1}
		}
		require.NoError(t, c.PutStep(Step{Step: k, Entries: entries, Layers: layers, Layout: lay, Data: stepData(entries, layers, lay)}, acks.fn()))
	}
	got := acks.take(t, len(reqs)*(last-first+1))
	for i, a := range got {
		require.NoError(t, a.Err)
		assert.Equal(t, first+i/len(reqs), a.Step)
		assert.Equal(t, reqs[i%len(reqs)], a.Request)
	}
}

func TestRoundTripOverTCPAndUnixSocket(t *testing.T) {
	_, tcp, unix := holderAt(t, Options{})
	for name, addr := range map[string]string{"tcp": tcp, "unix": unix} {
		t.Run(name, func(t *testing.T) {
			dep := "dep-" + name
			layers := [2]int{4, 8}
			w := dial(t, addr, RoleWriter, dep, 1)
			for _, r := range []string{"a", "b"} {
				putPrompt(t, w, r, layers, 7, testLayout)
			}
			writeSteps(t, w, []string{"a", "b"}, layers, 7, 1, 150, testLayout)

			rd := dial(t, addr, RoleReader, dep, 1)
			var chunks []Chunk
			end, err := rd.Get(ctxT(t), "a", func(c Chunk) error { chunks = append(chunks, c); return nil })
			require.NoError(t, err)
			assert.Equal(t, End{Request: "a", AckedStep: 150}, end)
			require.Len(t, chunks, 2, "157 tokens in chunks of 100")
			assert.Equal(t, [2]int{0, 100}, chunks[0].Tokens)
			assert.Equal(t, [2]int{100, 157}, chunks[1].Tokens)
			assert.Equal(t, []int{4, 2, 2, 57, 4}, chunks[1].Shape)

			res, err := rd.Restore(ctxT(t), "b")
			require.NoError(t, err)
			assert.Equal(t, 150, res.AckedStep)
			assert.Equal(t, 157, res.Tokens)
			require.Len(t, res.Layers, 4)
			for i, l := range res.Layers {
				assert.Equal(t, 4+i, l.Layer)
				assert.Equal(t, expectLayer("b", l.Layer, 157, testLayout), l.Data, "layer %d", l.Layer)
			}

			held, err := rd.List(ctxT(t))
			require.NoError(t, err)
			per := int64(157 * 4 * testLayout.tokenBytes())
			assert.Equal(t, []Held{{Request: "a", AckedStep: 150, Bytes: per}, {Request: "b", AckedStep: 150, Bytes: per}}, held)

			other := dial(t, addr, RoleReader, dep, 2)
			end, err = other.Get(ctxT(t), "a", nil)
			require.NoError(t, err)
			assert.Equal(t, -1, end.AckedStep, "stage 2's replicas are not stage 1's")
		})
	}
}

func TestGetOfAnUnknownOrIncompleteRequestSendsNothing(t *testing.T) {
	_, addr, _ := holderAt(t, Options{})
	w := dial(t, addr, RoleWriter, "d", 0)
	acks := newAcks()
	require.NoError(t, w.Put(Put{Request: "half", Layer: 0, Tokens: [2]int{0, 3}, Layout: testLayout, Data: promptData("half", 0, 0, 3, testLayout)}, acks.fn()))
	assert.Equal(t, -1, acks.take(t, 1)[0].Step)

	for _, req := range []string{"nobody", "half"} {
		called := 0
		end, err := w.Get(ctxT(t), req, func(Chunk) error { called++; return nil })
		require.NoError(t, err)
		assert.Equal(t, End{Request: req, AckedStep: -1}, end)
		assert.Zero(t, called, "%s: no chunk of an incomplete cache", req)
	}
	res, err := w.Restore(ctxT(t), "nobody")
	require.NoError(t, err)
	assert.Equal(t, -1, res.AckedStep)
	assert.Empty(t, res.Layers)
}

func TestTheBudgetRefusesWholeStepsAsFull(t *testing.T) {
	layers := [2]int{0, 2}
	per := 2 * testLayout.tokenBytes() // one step of one request
	prompt := 4 * per                  // 4 tokens, 2 layers
	h, addr, _ := holderAt(t, Options{Budget: int64(2*prompt + 3*per)})
	w := dial(t, addr, RoleWriter, "d", 0)
	putPrompt(t, w, "a", layers, 4, testLayout)
	putPrompt(t, w, "b", layers, 4, testLayout)
	writeSteps(t, w, []string{"a", "b"}, layers, 4, 1, 1, testLayout) // 2 steps stored, room for 1

	acks := newAcks()
	entries := []Entry{{"a", 5, nil}, {"b", 5, nil}}
	require.NoError(t, w.PutStep(Step{Step: 2, Entries: entries, Layers: layers, Layout: testLayout, Data: stepData(entries, layers, testLayout)}, acks.fn()))
	got := acks.take(t, 2)
	require.NoError(t, got[0].Err, "a's step fits")
	require.ErrorIs(t, got[1].Err, ErrFull, "b's does not")
	var he *HolderError
	require.True(t, errors.As(got[1].Err, &he))
	assert.Equal(t, "b", he.Request)
	assert.Equal(t, 2, he.Step)
	assert.Equal(t, int64(2*prompt+3*per), h.Stats().BytesHeld, "exactly what was acked")

	// A prompt beyond the budget: refused, nothing of it held.
	require.NoError(t, w.Put(Put{Request: "c", Layer: 0, Tokens: [2]int{0, 1}, Layout: testLayout, Data: promptData("c", 0, 0, 1, testLayout)}, acks.fn()))
	require.ErrorIs(t, acks.take(t, 1)[0].Err, ErrFull)
	held, err := w.List(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, []Held{{"a", 2, int64(prompt + 2*per)}, {"b", 1, int64(prompt + per)}}, held)

	// b stands at step 1, whole: a reader sees tokens [0,5) and nothing of the refused step.
	res, err := w.Restore(ctxT(t), "b")
	require.NoError(t, err)
	assert.Equal(t, 1, res.AckedStep)
	assert.Equal(t, 5, res.Tokens)
	assert.Equal(t, expectLayer("b", 1, 5, testLayout), res.Layers[1].Data)

	// Freeing a makes room: b's step 2 sent again is stored.
	d, err := w.Drop(ctxT(t), "a")
	require.NoError(t, err)
	assert.Equal(t, Dropped{Requests: 1, Bytes: int64(prompt + 2*per)}, d)
	writeSteps(t, w, []string{"b"}, layers, 4, 2, 2, testLayout)
}

func TestPutsThatDoNotContinueTheReplicaConflict(t *testing.T) {
	_, addr, _ := holderAt(t, Options{})
	w := dial(t, addr, RoleWriter, "d", 0)
	layers := [2]int{0, 2}
	acks := newAcks()
	step := func(k, tok int, ls [2]int) error {
		e := []Entry{{"r", tok, nil}}
		require.NoError(t, w.PutStep(Step{Step: k, Entries: e, Layers: ls, Layout: testLayout, Data: stepData(e, ls, testLayout)}, acks.fn()))
		return acks.take(t, 1)[0].Err
	}
	assert.ErrorIs(t, step(1, 4, layers), ErrConflict, "no prompt yet")

	// A last put while layer 1 is missing tokens.
	require.NoError(t, w.Put(Put{Request: "r", Layer: 0, Tokens: [2]int{0, 4}, Layout: testLayout, Data: promptData("r", 0, 0, 4, testLayout), Last: true, Layers: layers}, acks.fn()))
	assert.ErrorIs(t, acks.take(t, 1)[0].Err, ErrConflict)
	// Tokens that do not follow.
	require.NoError(t, w.Put(Put{Request: "r", Layer: 0, Tokens: [2]int{1, 4}, Layout: testLayout, Data: promptData("r", 0, 1, 4, testLayout)}, acks.fn()))
	assert.ErrorIs(t, acks.take(t, 1)[0].Err, ErrConflict)

	putPrompt(t, w, "r", layers, 4, testLayout)
	assert.ErrorIs(t, step(2, 5, layers), ErrConflict, "step 1 missing")
	assert.ErrorIs(t, step(1, 9, layers), ErrConflict, "wrong position")
	assert.ErrorIs(t, step(1, 4, [2]int{0, 1}), ErrConflict, "other layers")
	require.NoError(t, step(1, 4, layers))
	require.NoError(t, step(1, 4, layers), "a step sent again is acked again")
	require.NoError(t, step(2, 5, layers))
	held, err := w.List(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, 2, held[0].AckedStep)
	assert.Equal(t, int64(6*2*testLayout.tokenBytes()), held[0].Bytes, "the repeated step is held once")
}

func TestDropAndDropDeployment(t *testing.T) {
	h, addr, _ := holderAt(t, Options{})
	layers := [2]int{0, 1}
	for _, dep := range []string{"d1", "d2"} {
		for stage := range 2 {
			w := dial(t, addr, RoleWriter, dep, stage)
			putPrompt(t, w, "x", layers, 2, testLayout)
			putPrompt(t, w, "y", layers, 2, testLayout)
		}
	}
	one := int64(2 * testLayout.tokenBytes())
	assert.Equal(t, Stats{BytesHeld: 8 * one, RequestsHeld: 8, Budget: 1 << 30, Connections: 4}, h.Stats())

	c := dial(t, addr, RoleWriter, "d1", 0)
	d, err := c.Drop(ctxT(t), "x")
	require.NoError(t, err)
	assert.Equal(t, Dropped{1, one}, d)
	d, err = c.Drop(ctxT(t), "x")
	require.NoError(t, err)
	assert.Equal(t, Dropped{0, 0}, d, "dropping twice is harmless")
	end, err := c.Get(ctxT(t), "x", nil)
	require.NoError(t, err)
	assert.Equal(t, -1, end.AckedStep)

	d, err = c.DropDeployment(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, Dropped{3, 3 * one}, d, "every stage of d1")
	assert.Equal(t, int64(4*one), h.Stats().BytesHeld, "d2 untouched")
	c2 := dial(t, addr, RoleReader, "d2", 1)
	held, err := c2.List(ctxT(t))
	require.NoError(t, err)
	assert.Len(t, held, 2)
}

func TestAckedStepIsMonotonicAndReadsAreConsistent(t *testing.T) {
	_, addr, _ := holderAt(t, Options{ChunkTokens: 16})
	layers := [2]int{0, 3}
	w := dial(t, addr, RoleWriter, "d", 0)
	putPrompt(t, w, "r", layers, 10, testLayout)
	done := make(chan struct{})
	go func() {
		defer close(done)
		writeSteps(t, w, []string{"r"}, layers, 10, 1, 300, testLayout)
	}()
	rd := dial(t, addr, RoleReader, "d", 0)
	last := -1
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		res, err := rd.Restore(ctxT(t), "r")
		require.NoError(t, err)
		require.GreaterOrEqual(t, res.AckedStep, last, "acked_step never goes back")
		last = res.AckedStep
		require.Equal(t, 10+res.AckedStep, res.Tokens, "the chunks stand exactly at the acked step")
		for _, l := range res.Layers {
			require.Equal(t, expectLayer("r", l.Layer, res.Tokens, testLayout), l.Data)
		}
	}
	assert.Equal(t, 300, last)
}

func TestConcurrentWritersAndReaders(t *testing.T) {
	h, tcp, unix := holderAt(t, Options{})
	layers := [2]int{0, 2}
	const writers, steps = 6, 60
	var wg sync.WaitGroup
	for i := range writers {
		addr := tcp
		if i%2 == 1 {
			addr = unix
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			w := dial(t, addr, RoleWriter, "d", i)
			reqs := []string{fmt.Sprintf("r%d-0", i), fmt.Sprintf("r%d-1", i)}
			for _, r := range reqs {
				putPrompt(t, w, r, layers, 5, testLayout)
			}
			writeSteps(t, w, reqs, layers, 5, 1, steps, testLayout)
		}()
		go func() {
			defer wg.Done()
			rd := dial(t, addr, RoleReader, "d", i)
			for range 20 {
				res, err := rd.Restore(ctxT(t), fmt.Sprintf("r%d-1", i))
				if !assert.NoError(t, err) {
					return
				}
				if res.AckedStep >= 0 {
					assert.Equal(t, expectLayer(res.Request, 1, res.Tokens, testLayout), res.Layers[1].Data)
				}
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, writers*2, h.Stats().RequestsHeld)
	assert.Equal(t, int64(writers*2*(5+steps)*2*testLayout.tokenBytes()), h.Stats().BytesHeld)
}

func TestAClosedClientFailsItsCalls(t *testing.T) {
	_, addr, _ := holderAt(t, Options{})
	c := dial(t, addr, RoleWriter, "d", 0)
	require.NoError(t, c.Close())
	_, err := c.List(ctxT(t))
	assert.ErrorIs(t, err, ErrClosed)
	var got []Ack
	err = c.Put(Put{Request: "r", Layout: testLayout}, func(a Ack) { got = append(got, a) })
	assert.ErrorIs(t, err, ErrClosed)
	require.Len(t, got, 1, "the callback hears of it too")
	assert.ErrorIs(t, got[0].Err, ErrClosed)
}

// TestPutStepEntriesCarryTheirOwnSteps: continuous batching puts requests at different steps
// in one frame; each entry's "step" wins over the frame's, and its ack and refusal carry it.
func TestPutStepEntriesCarryTheirOwnSteps(t *testing.T) {
	layers := [2]int{0, 2}
	_, addr, _ := holderAt(t, Options{Budget: 1 << 20})
	w := dial(t, addr, RoleWriter, "d", 0)
	putPrompt(t, w, "a", layers, 4, testLayout)
	putPrompt(t, w, "b", layers, 4, testLayout)
	writeSteps(t, w, []string{"a"}, layers, 4, 1, 2, testLayout) // a at step 2, b at step 0

	step := func(k int) *int { return &k }
	acks := newAcks()
	entries := []Entry{{"a", 6, step(3)}, {"b", 4, step(1)}, {"b", 9, step(4)}}
	require.NoError(t, w.PutStep(Step{Step: 1, Entries: entries, Layers: layers, Layout: testLayout, Data: stepData(entries, layers, testLayout)}, acks.fn()))
	got := acks.take(t, 3)
	require.NoError(t, got[0].Err)
	assert.Equal(t, Ack{Request: "a", Step: 3}, got[0])
	require.NoError(t, got[1].Err)
	assert.Equal(t, Ack{Request: "b", Step: 1}, got[1])
	require.ErrorIs(t, got[2].Err, ErrConflict, "b's step 4 does not follow its step 1")
	var he *HolderError
	require.True(t, errors.As(got[2].Err, &he))
	assert.Equal(t, 4, he.Step)
	held, err := w.List(ctxT(t))
	require.NoError(t, err)
	require.Len(t, held, 2)
	assert.Equal(t, 3, held[0].AckedStep)
	assert.Equal(t, 1, held[1].AckedStep)
}
