package kvcache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// lendFile makes a reader's memory file of size bytes under LendDir, removed after the test.
func lendFile(t *testing.T, size int64) string {
	t.Helper()
	if _, err := os.Stat(LendDir); err != nil {
		t.Skipf("no %s on this machine: %v", LendDir, err)
	}
	f, err := os.CreateTemp(LendDir, LendPrefix+"test-*")
	require.NoError(t, err)
	p := f.Name()
	t.Cleanup(func() { _ = os.Remove(p) })
	require.NoError(t, f.Truncate(size))
	require.NoError(t, f.Close())
	return p
}

func TestGetIntoLentMemoryIsTheChunksBytes(t *testing.T) {
	_, tcp, sock := holderAt(t, Options{ChunkTokens: 7})
	shmReplica(t, tcp, "r")
	want, _ := getChunks(t, tcp, "r")
	var total int64
	for _, c := range want {
		total += int64(len(c.Data))
	}

	path := lendFile(t, total+4096)
	c := rawUnix(t, sock)
	_, err := c.Write(rawFrame(fmt.Sprintf(`{"op":"lend","path":%q,"size":%d}`, path, total+4096), nil))
	require.NoError(t, err)
	h, _ := readRaw(t, c)
	require.JSONEq(t, fmt.Sprintf(`{"op":"lent","path":%q,"size":%d}`, path, total+4096), h)

	_, err = c.Write(rawFrame(`{"op":"get","request":"r","into":true}`, nil))
	require.NoError(t, err)
	h, fds := readShm(t, c)
	require.Empty(t, fds, "an into answer passes no file")
	var m shmMsg
	require.NoError(t, json.Unmarshal([]byte(h), &m))
	require.True(t, m.Into)
	require.Equal(t, 5, m.AckedStep)
	lent, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Len(t, m.Chunks, len(want))
	for i, ch := range m.Chunks {
		require.Equal(t, want[i].Tokens, ch.Tokens)
		require.True(t, bytes.Equal(want[i].Data, lent[ch.Offset:ch.Offset+ch.Length]), "chunk %d", i)
	}

	// streamed: the frame first, then filled frames as the chunks land, the last covering all
	clear(lent)
	require.NoError(t, os.WriteFile(path, lent, 0o600))
	_, err = c.Write(rawFrame(`{"op":"get","request":"r","into":true,"stream":true}`, nil))
	require.NoError(t, err)
	h, fds = readShm(t, c)
	require.Empty(t, fds)
	var sm shmMsg
	require.NoError(t, json.Unmarshal([]byte(h), &sm))
	require.True(t, sm.Into && sm.Stream)
	upto := 0
	for upto < len(sm.Chunks) {
		h, _ = readRaw(t, c)
		var f filledMsg
		require.NoError(t, json.Unmarshal([]byte(h), &f))
		require.Equal(t, "filled", f.Op)
		require.Greater(t, f.Upto, upto, "the filled prefix only grows")
		upto = f.Upto
	}
	require.Equal(t, len(want), upto)
	lent, err = os.ReadFile(path)
	require.NoError(t, err)
	for i, ch := range sm.Chunks {
		require.True(t, bytes.Equal(want[i].Data, lent[ch.Offset:ch.Offset+ch.Length]), "streamed chunk %d", i)
	}

	// a replica larger than the lent memory is answered with a memory file instead
	small := lendFile(t, 64)
	_, err = c.Write(rawFrame(fmt.Sprintf(`{"op":"lend","path":%q,"size":64}`, small), nil))
	require.NoError(t, err)
	readRaw(t, c)
	_, err = c.Write(rawFrame(`{"op":"get","request":"r","into":true}`, nil))
	require.NoError(t, err)
	h, fds = readShm(t, c)
	require.Len(t, fds, 1)
	require.NotContains(t, h, `"into"`)
	require.NoError(t, os.NewFile(uintptr(fds[0]), "shm").Close())
}

func TestLendRefusesMemoryThatIsNotTheReadersOwnFile(t *testing.T) {
	_, tcp, sock := holderAt(t, Options{Budget: 1 << 20})
	target := lendFile(t, 4096)
	link := filepath.Join(LendDir, LendPrefix+"link-"+fmt.Sprint(os.Getpid()))
	require.NoError(t, os.Symlink(target, link))
	t.Cleanup(func() { _ = os.Remove(link) })
	outside := filepath.Join(t.TempDir(), LendPrefix+"x")
	require.NoError(t, os.WriteFile(outside, make([]byte, 4096), 0o600))

	for _, tc := range []struct{ path, size, want string }{
		{outside, "4096", "is not /dev/shm/schooner-kvrecv-"},
		{LendDir + "/../etc/" + LendPrefix + "x", "4096", "is not /dev/shm/schooner-kvrecv-"},
		{LendDir + "/" + LendPrefix, "4096", "is not /dev/shm/schooner-kvrecv-"},
		{target, "0", "is not in (0, 1048576]"},
		{target, "2097152", "is not in (0, 1048576]"},
		{link, "4096", "opening"},
		{target, "8192", "holds 4096 bytes, not the 8192 lent"},
	} {
		c := rawUnix(t, sock)
		_, err := c.Write(rawFrame(fmt.Sprintf(`{"op":"lend","path":%q,"size":%s}`, tc.path, tc.size), nil))
		require.NoError(t, err)
		h, _ := readRaw(t, c)
		require.Contains(t, h, `"op":"error"`, tc.path)
		require.Contains(t, h, tc.want, tc.path)
	}
	// over TCP there is nothing to share
	c := rawConn(t, tcp, `{"op":"hello","role":"reader","deployment":"d","stage":0,"version":1}`)
	_, err := c.Write(rawFrame(fmt.Sprintf(`{"op":"lend","path":%q,"size":4096}`, target), nil))
	require.NoError(t, err)
	h, _ := readRaw(t, c)
	require.Contains(t, h, "only over a unix socket")
}
