package kvcache

import (
	"bytes"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/schooner-ml/schooner/internal/frame"
)

// A reader lends the holder memory to restore into: a file it made under LendDir, named with
// LendPrefix, that it has mapped and page-locked for its GPU ahead of any failure. The holder
// maps the file once per connection and writes each replica a get asks for with "into" there,
// so a restore costs the holder's copy and one DMA on the reader's side: no memory file to
// create and fault in, no page-locking, no copy through a staging buffer.
const (
	LendDir    = "/dev/shm"
	LendPrefix = "schooner-kvrecv-"
)

// checkLend refuses a lend whose path is not a plain name under LendDir with LendPrefix, or
// whose size is not positive or passes the holder's budget (a replica never exceeds it).
func checkLend(m lendMsg, budget int64) error {
	dir, name := filepath.Split(m.Path)
	switch {
	case filepath.Clean(dir) != LendDir || !strings.HasPrefix(name, LendPrefix) || len(name) == len(LendPrefix):
		return fmt.Errorf("path %q is not %s/%s<name>", m.Path, LendDir, LendPrefix)
	case m.Size <= 0 || m.Size > budget:
		return fmt.Errorf("size %d is not in (0, %d], the holder's budget", m.Size, budget)
	}
	return nil
}

// lend maps the reader's file for this connection, replacing what it lent before. The file
// must be a regular file (no link is followed) owned by the peer's own user, so a reader can
// make the holder write only where it could write itself.
func (cn *conn) lend(m lendMsg) *HolderError {
	uc, ok := cn.c.(*net.UnixConn)
	if !ok {
		return refuse(CodeBadRequest, "lend: only over a unix socket (the memory must be on the holder's host)")
	}
	uid, err := peerUID(uc)
	if err != nil {
		return refuse(CodeBadRequest, "lend: the peer's credentials: %v", err)
	}
	fd, err := unix.Open(m.Path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return refuse(CodeBadRequest, "lend: opening %s: %v", m.Path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return refuse(CodeBadRequest, "lend: %s: %v", m.Path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return refuse(CodeBadRequest, "lend: %s is not a regular file", m.Path)
	case st.Uid != uid:
		return refuse(CodeBadRequest, "lend: %s belongs to uid %d, the peer is uid %d", m.Path, st.Uid, uid)
	case st.Size < m.Size:
		return refuse(CodeBadRequest, "lend: %s holds %d bytes, not the %d lent", m.Path, st.Size, m.Size)
	}
	mem, err := unix.Mmap(fd, 0, int(m.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return refuse(CodeBadRequest, "lend: mapping %s: %v", m.Path, err)
	}
	cn.unlend()
	cn.lent = mem
	return nil
}

// unlend unmaps the lent memory, if any (when the reader lends anew and when it leaves).
func (cn *conn) unlend() {
	if cn.lent != nil {
		_ = unix.Munmap(cn.lent)
		cn.lent = nil
	}
}

// peerUID is the user of the process at the other end of a unix socket.
func peerUID(uc *net.UnixConn) (uint32, error) {
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, cerr
	}
	return cred.Uid, nil
}

// answerLend answers a lend that was taken: lent, and with the arena's read-only descriptor
// riding on the frame when the reader asked for the arena and there is (or now is) one.
func (cn *conn) answerLend(m lendMsg) {
	msg := lentMsg{Op: opLent, Path: m.Path, Size: m.Size}
	uc, _ := cn.c.(*net.UnixConn)
	if !m.Arena || uc == nil {
		cn.write(msg, nil)
		return
	}
	fd := -1
	a, err := cn.h.store.ensureArena()
	if err == nil {
		fd, err = a.readOnlyFD()
	}
	if err != nil {
		cn.h.opts.Logger.Warn().Err(err).Msg("kv-cache lend: no arena for the reader; restores copy the prompt")
		msg.ArenaError = err.Error()
		cn.write(msg, nil)
		return
	}
	defer unix.Close(fd)
	msg.ArenaSize = a.size()
	var hdr bytes.Buffer
	if err := frame.Write(&hdr, msg, nil); err != nil {
		cn.write(lentMsg{Op: opLent, Path: m.Path, Size: m.Size, ArenaError: err.Error()}, nil)
		return
	}
	cn.sendFD(uc, hdr.Bytes(), fd)
	cn.arenaShared = cn.werr == nil
}

// unpinLast ends the pin of the replica the connection's last arena answer pointed into.
func (cn *conn) unpinLast() {
	if cn.unpin != nil {
		cn.unpin()
		cn.unpin = nil
	}
}
