package kvcache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func newTestArena(t *testing.T, size int64) *arena {
	t.Helper()
	a, err := newArena(size)
	if err != nil {
		t.Skipf("no memfd arena on this machine: %v", err)
	}
	t.Cleanup(a.close)
	return a
}

func TestArenaAllocatesFirstFitAlignedAndMergesWhatIsGivenBack(t *testing.T) {
	a := newTestArena(t, 8*arenaAlign)
	x, ok := a.alloc(1)
	require.True(t, ok)
	y, ok := a.alloc(arenaAlign + 1) // two units
	require.True(t, ok)
	z, ok := a.alloc(3 * arenaAlign)
	require.True(t, ok)
	require.Equal(t, []int64{0, arenaAlign, 3 * arenaAlign}, []int64{x, y, z})
	_, ok = a.alloc(3 * arenaAlign)
	require.False(t, ok, "two units are left")
	_, ok = a.alloc(0)
	require.False(t, ok)

	a.release(y, arenaAlign+1)
	w, ok := a.alloc(arenaAlign) // first fit: the hole y left
	require.True(t, ok)
	require.Equal(t, y, w)
	a.release(x, 1)
	a.release(z, 3*arenaAlign)
	a.release(w, arenaAlign)
	require.Equal(t, []extent{{0, 8 * arenaAlign}}, a.free, "every neighbour merged")
	require.Panics(t, func() { a.release(0, 1) }, "giving back what is free")
}

func TestGetPointsAtThePromptInTheArenaAndCopiesOnlyTheSteps(t *testing.T) {
	h, tcp, sock := holderAt(t, Options{Budget: 1 << 20, ChunkTokens: 2})
	uc := rawUnix(t, sock)
	lent := lendFile(t, 1<<16)
	_, err := uc.Write(rawFrame(fmt.Sprintf(`{"op":"lend","path":%q,"size":%d,"arena":true}`, lent, 1<<16), nil))
	require.NoError(t, err)
	hdr, fds := readShm(t, uc)
	var lm lentMsg
	require.NoError(t, json.Unmarshal([]byte(hdr), &lm))
	require.Equal(t, int64(1<<20), lm.ArenaSize)
	require.Len(t, fds, 1, "the arena's descriptor rides on lent")
	_, err = unix.Mmap(fds[0], 0, int(lm.ArenaSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	require.Error(t, err, "the reader's descriptor is read-only")
	mem, err := unix.Mmap(fds[0], 0, int(lm.ArenaSize), unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	require.NoError(t, unix.Close(fds[0]))
	t.Cleanup(func() { _ = unix.Munmap(mem) })
	ar := h.store.arena.Load()
	require.NotNil(t, ar)

	shmReplica(t, tcp, "r") // layers [1,4), 30 prompt tokens in two puts a layer, 5 steps
	want, _ := getChunks(t, tcp, "r")
	stepsWant, err := Assemble(want, End{Request: "r", AckedStep: 5})
	require.NoError(t, err)

	_, err = uc.Write(rawFrame(`{"op":"get","request":"r","into":true,"stream":true,"arena":true}`, nil))
	require.NoError(t, err)
	hdr, fds = readShm(t, uc)
	require.Empty(t, fds)
	var m shmMsg
	require.NoError(t, json.Unmarshal([]byte(hdr), &m))
	require.Equal(t, 5, m.AckedStep)
	require.Len(t, m.Arena, 6, "three layers of two pieces")
	for i, p := range m.Arena {
		l := 1 + i/2
		require.Equal(t, [2]int{l, l + 1}, p.Layers)
		require.Zero(t, p.Offset%arenaAlign)
		require.True(t, bytes.Equal(promptData("r", l, p.Tokens[0], p.Tokens[1], testLayout), mem[p.Offset:p.Offset+p.Length]),
			"piece %d of layer %d", i, l)
	}
	upto := 0
	for upto < len(m.Chunks) {
		hdr, _ = readRaw(t, uc)
		var f filledMsg
		require.NoError(t, json.Unmarshal([]byte(hdr), &f))
		upto = f.Upto
	}
	got, err := os.ReadFile(lent)
	require.NoError(t, err)
	var steps []Chunk
	for _, c := range m.Chunks {
		require.GreaterOrEqual(t, c.Tokens[0], 30, "only the decode steps are copied")
		steps = append(steps, Chunk{Request: "r", Layers: c.Layers, Tokens: c.Tokens, DType: c.DType, Shape: c.Shape,
			Data: got[c.Offset : c.Offset+c.Length]})
	}
	row, heads := testLayout.rowBytes(), testLayout.KVHeads
	covered := 30
	for _, c := range steps {
		n := c.Tokens[1] - c.Tokens[0]
		require.Equal(t, covered, c.Tokens[0])
		covered = c.Tokens[1]
		for i, l := range stepsWant.Layers {
			for kh := range 2 * heads {
				at := ((i*2*heads + kh) * n) * row
				require.True(t, bytes.Equal(l.Data[(kh*35+c.Tokens[0])*row:(kh*35+c.Tokens[1])*row], c.Data[at:at+n*row]),
					"layer %d, tokens %v", l.Layer, c.Tokens)
			}
		}
	}
	require.Equal(t, 35, covered)

	// dropped while the answer points at it: the arena ranges stay until the next get
	free := ar.freeBytes()
	w := dial(t, tcp, RoleWriter, "d", 0)
	_, err = w.Drop(ctxT(t), "r")
	require.NoError(t, err)
	require.Equal(t, free, ar.freeBytes(), "pinned by the reader's last answer")
	_, err = uc.Write(rawFrame(`{"op":"get","request":"gone","into":true,"stream":true,"arena":true}`, nil))
	require.NoError(t, err)
	readShm(t, uc)
	eventually(t, "the arena ranges given back", func() bool { return ar.freeBytes() == ar.size() })

	// a refused put gives its arena range back at once
	acks := newAcks()
	require.NoError(t, w.Put(Put{Request: "q", Layer: 1, Tokens: [2]int{4, 8}, Layout: testLayout,
		Data: promptData("q", 1, 4, 8, testLayout)}, acks.fn()))
	require.Error(t, acks.take(t, 1)[0].Err, "tokens [4,8) do not follow [0,0)")
	require.Equal(t, ar.size(), ar.freeBytes())
}
