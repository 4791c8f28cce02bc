package kvcache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// byToken reads the whole replica of req one token a chunk (the holder must chunk by 1) and
// returns each token's chunk payload, indexed by position.
func byToken(t *testing.T, addr, req string) [][]byte {
	t.Helper()
	chunks, _ := getChunks(t, addr, req)
	out := make([][]byte, len(chunks))
	for i, c := range chunks {
		require.Equal(t, [2]int{i, i + 1}, c.Tokens)
		out[i] = c.Data
	}
	return out
}

// requireTokens checks that data, a chunk [layers, 2, heads, b-a, head_dim] of tokens [a,b),
// holds the same bytes as the one-token chunks in want.
func requireTokens(t *testing.T, want [][]byte, a, b int, data []byte) {
	t.Helper()
	layers, n := 3, b-a // shmReplica's layers [1,4)
	row := testLayout.rowBytes()
	require.Len(t, data, layers*testLayout.tokenBytes()*n)
	for pos := a; pos < b; pos++ {
		for l := range layers {
			for kh := range 2 * testLayout.KVHeads {
				got := data[((l*2*testLayout.KVHeads+kh)*n+pos-a)*row:][:row]
				exp := want[pos][(l*2*testLayout.KVHeads+kh)*row:][:row]
				require.True(t, bytes.Equal(exp, got), "token %d layer %d head %d", pos, l, kh)
			}
		}
	}
}

func TestGetFromAStepSendsOnlyTheStepsAfterIt(t *testing.T) {
	_, tcp, _ := holderAt(t, Options{ChunkTokens: 1})
	shmReplica(t, tcp, "r") // 30 prompt tokens, steps 1..5 at positions 30..34
	want := byToken(t, tcp, "r")
	require.Len(t, want, 35)

	c := dial(t, tcp, RoleReader, "d", 0)
	var got []Chunk
	end, err := c.GetFrom(ctxT(t), "r", 3, func(ch Chunk) error { got = append(got, ch); return nil })
	require.NoError(t, err)
	require.Equal(t, End{Request: "r", AckedStep: 5, FromStep: 3}, end)
	require.Len(t, got, 3, "steps 3, 4 and 5: positions 32, 33, 34")
	for i, ch := range got {
		require.Equal(t, [2]int{32 + i, 33 + i}, ch.Tokens)
		requireTokens(t, want, 32+i, 33+i, ch.Data)
	}

	// past the last step: nothing to send, and the end says where the replica stands
	got = nil
	end, err = c.GetFrom(ctxT(t), "r", 6, func(ch Chunk) error { got = append(got, ch); return nil })
	require.NoError(t, err)
	require.Empty(t, got)
	require.Equal(t, End{Request: "r", AckedStep: 5, FromStep: 6}, end)

	// from step 1: every step, no prompt; from 0: the whole replica as a plain get
	got = nil
	_, err = c.GetFrom(ctxT(t), "r", 1, func(ch Chunk) error { got = append(got, ch); return nil })
	require.NoError(t, err)
	require.Len(t, got, 5)
	require.Equal(t, 30, got[0].Tokens[0])
	got = nil
	end, err = c.GetFrom(ctxT(t), "r", 0, func(ch Chunk) error { got = append(got, ch); return nil })
	require.NoError(t, err)
	require.Len(t, got, 35)
	require.Zero(t, end.FromStep)

	// a request the holder does not hold
	end, err = c.GetFrom(ctxT(t), "nope", 3, func(Chunk) error { t.Fatal("a chunk of nothing"); return nil })
	require.NoError(t, err)
	require.Equal(t, End{Request: "nope", AckedStep: -1, FromStep: 3}, end)
}

func TestShmGetFromAStepHoldsOnlyTheStepsInItsFile(t *testing.T) {
	_, tcp, sock := holderAt(t, Options{ChunkTokens: 1})
	shmReplica(t, tcp, "r")
	want := byToken(t, tcp, "r")

	m, f := getShmFile(t, rawUnix(t, sock), `{"op":"get","request":"r","shm":true,"from_step":4}`)
	require.Equal(t, 4, m.FromStep)
	require.Equal(t, 5, m.AckedStep)
	all, err := io.ReadAll(f)
	require.NoError(t, err)
	require.Len(t, m.Chunks, 2, "positions 33 and 34")
	for i, ch := range m.Chunks {
		require.Equal(t, [2]int{33 + i, 34 + i}, ch.Tokens)
		requireTokens(t, want, 33+i, 34+i, all[ch.Offset:ch.Offset+ch.Length])
	}
	require.Len(t, all, int(m.Chunks[1].Offset+m.Chunks[1].Length), "the file holds the steps only")
}

func TestStreamedGetFromAStepSkipsTheArenaAndCopiesOnlyTheSteps(t *testing.T) {
	_, tcp, sock := holderAt(t, Options{Budget: 1 << 20, ChunkTokens: 1})
	uc := rawUnix(t, sock)
	lent := lendFile(t, 1<<16)
	_, err := uc.Write(rawFrame(fmt.Sprintf(`{"op":"lend","path":%q,"size":%d,"arena":true}`, lent, 1<<16), nil))
	require.NoError(t, err)
	_, fds := readShm(t, uc)
	require.Len(t, fds, 1)
	shmReplica(t, tcp, "r") // the prompt lies in the arena
	want := byToken(t, tcp, "r")

	_, err = uc.Write(rawFrame(`{"op":"get","request":"r","into":true,"stream":true,"arena":true,"from_step":2}`, nil))
	require.NoError(t, err)
	h, fds := readShm(t, uc)
	require.Empty(t, fds)
	var m shmMsg
	require.NoError(t, json.Unmarshal([]byte(h), &m))
	require.Empty(t, m.Arena, "a get from a step wants no prompt")
	require.True(t, m.Into)
	require.True(t, m.Stream)
	require.Equal(t, 2, m.FromStep)
	require.Len(t, m.Chunks, 4, "positions 31..34")
	for upto := 0; upto < len(m.Chunks); {
		hdr, _ := readRaw(t, uc)
		var fm filledMsg
		require.NoError(t, json.Unmarshal([]byte(hdr), &fm))
		upto = fm.Upto
	}
	got, err := os.ReadFile(lent)
	require.NoError(t, err)
	for i, ch := range m.Chunks {
		require.Equal(t, [2]int{31 + i, 32 + i}, ch.Tokens)
		requireTokens(t, want, 31+i, 32+i, got[ch.Offset:ch.Offset+ch.Length])
	}
}
