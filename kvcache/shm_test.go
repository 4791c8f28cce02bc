package kvcache

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// shmReplica puts a request of 30 prompt tokens over layers [1,4) and 5 decode steps.
// getChunks reads the replica of req from the holder at addr through the chunk path: its
// chunks and the end of the answer.
func getChunks(t *testing.T, addr, req string) ([]Chunk, End) {
	t.Helper()
	var chunks []Chunk
	end, err := dial(t, addr, RoleReader, "d", 0).Get(ctxT(t), req, func(c Chunk) error {
		chunks = append(chunks, c)
		return nil
	})
	require.NoError(t, err)
	return chunks, end
}

func shmReplica(t *testing.T, addr, req string) {
	t.Helper()
	w := dial(t, addr, RoleWriter, "d", 0)
	layers := [2]int{1, 4}
	putPrompt(t, w, req, layers, 30, testLayout)
	acks := newAcks()
	for k := 1; k <= 5; k++ {
		es := []Entry{{Request: req, Token: 29 + k}}
		require.NoError(t, w.PutStep(Step{Step: k, Entries: es, Layers: layers, Layout: testLayout, Data: stepData(es, layers, testLayout)}, acks.fn()))
	}
	for _, a := range acks.take(t, 5) {
		require.NoError(t, a.Err)
	}
}

// rawUnix says hello on a raw unix connection.
func rawUnix(t *testing.T, path string) *net.UnixConn {
	t.Helper()
	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Write(rawFrame(`{"op":"hello","role":"reader","deployment":"d","stage":0,"version":1}`, nil))
	require.NoError(t, err)
	h, _ := readRaw(t, c)
	require.Equal(t, `{"op":"hello_ok","version":1}`, h)
	return c.(*net.UnixConn)
}

// readShm reads one frame whose first bytes may carry descriptors; it returns the header, the
// descriptors and the payload.
func readShm(t *testing.T, c *net.UnixConn) (string, []int) {
	t.Helper()
	var fds []int
	head := make([]byte, 4)
	oob := make([]byte, unix.CmsgSpace(4*4))
	got := 0
	for got < 4 {
		n, oobn, _, _, err := c.ReadMsgUnix(head[got:], oob)
		require.NoError(t, err)
		if oobn > 0 {
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			require.NoError(t, err)
			for _, m := range msgs {
				fs, err := unix.ParseUnixRights(&m)
				require.NoError(t, err)
				fds = append(fds, fs...)
			}
		}
		got += n
	}
	h, p := readRaw(t, io.MultiReader(bytes.NewReader(head), c))
	require.Empty(t, p)
	return h, fds
}

func TestShmGetIsTheChunksBytesInOneMemoryFile(t *testing.T) {
	_, tcp, sock := holderAt(t, Options{ChunkTokens: 7})
	shmReplica(t, tcp, "r")

	// the chunk path
	want, end := getChunks(t, tcp, "r")
	require.Equal(t, 5, end.AckedStep)
	require.Len(t, want, 5) // 35 tokens by 7

	c := rawUnix(t, sock)
	m, f := getShmFile(t, c, `{"op":"get","request":"r","shm":true}`)
	require.Equal(t, "shm", m.Op)
	require.Equal(t, "r", m.Request)
	require.Equal(t, 5, m.AckedStep)
	require.Len(t, m.Chunks, len(want))
	all, err := io.ReadAll(f)
	require.NoError(t, err)
	var off int64
	for i, ch := range m.Chunks {
		require.Equal(t, want[i].Layers, ch.Layers)
		require.Equal(t, want[i].Tokens, ch.Tokens)
		require.Equal(t, want[i].DType, ch.DType)
		require.Equal(t, want[i].Shape, ch.Shape)
		require.Equal(t, off, ch.Offset)
		require.Equal(t, int64(len(want[i].Data)), ch.Length)
		require.True(t, bytes.Equal(want[i].Data, all[ch.Offset:ch.Offset+ch.Length]), "chunk %d", i)
		off += ch.Length
	}
	require.Equal(t, off, int64(len(all)))

	// the connection goes on: a later frame is answered after it
	_, err = c.Write(rawFrame(`{"op":"list"}`, nil))
	require.NoError(t, err)
	h, _ := readRaw(t, c)
	require.Contains(t, h, `"op":"held"`)

	// an unknown request: an shm answer with no chunks, no descriptor, acked_step -1
	_, err = c.Write(rawFrame(`{"op":"get","request":"nope","shm":true}`, nil))
	require.NoError(t, err)
	h, fds := readShm(t, c)
	require.Empty(t, fds)
	require.JSONEq(t, `{"op":"shm","request":"nope","chunks":[],"acked_step":-1}`, h)
}

func TestShmOverTCPAnswersByChunks(t *testing.T) {
	_, tcp, _ := holderAt(t, Options{ChunkTokens: 7})
	shmReplica(t, tcp, "r")
	c := rawConn(t, tcp, `{"op":"hello","role":"reader","deployment":"d","stage":0,"version":1}`)
	_, err := c.Write(rawFrame(`{"op":"get","request":"r","shm":true}`, nil))
	require.NoError(t, err)
	for i := range 5 {
		h, p := readRaw(t, c)
		require.Contains(t, h, `"op":"chunk"`, "frame %d", i)
		require.NotEmpty(t, p)
	}
	h, _ := readRaw(t, c)
	require.JSONEq(t, `{"op":"end","request":"r","acked_step":5}`, h)
}

// getShmFile sends an shm get (its frame's JSON) on c and returns the answer's header and the
// memory file it passed (closed with the test).
func getShmFile(t *testing.T, c *net.UnixConn, get string) (shmMsg, *os.File) {
	t.Helper()
	_, err := c.Write(rawFrame(get, nil))
	require.NoError(t, err)
	h, fds := readShm(t, c)
	require.Len(t, fds, 1)
	f := os.NewFile(uintptr(fds[0]), "shm")
	t.Cleanup(func() { _ = f.Close() })
	var m shmMsg
	require.NoError(t, json.Unmarshal([]byte(h), &m))
	return m, f
}

func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(es)
}

func TestShmGetsLeakNoDescriptors(t *testing.T) {
	_, tcp, sock := holderAt(t, Options{ChunkTokens: 7})
	shmReplica(t, tcp, "r")
	c := rawUnix(t, sock)
	before := openFDs(t)
	for range 200 {
		_, err := c.Write(rawFrame(`{"op":"get","request":"r","shm":true}`, nil))
		require.NoError(t, err)
		_, fds := readShm(t, c)
		require.Len(t, fds, 1)
		require.NoError(t, unix.Close(fds[0]))
	}
	// the holder closes its copy once the frame is written, before it reads the next frame
	_, err := c.Write(rawFrame(`{"op":"list"}`, nil))
	require.NoError(t, err)
	readRaw(t, c)
	require.LessOrEqual(t, openFDs(t), before+2)
}
