package agent

import (
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// peerUID is the user id of the process at the other end of a Unix socket (SO_PEERCRED): the
// owner its save buffers must have. Other connections are taken to be the agent's own user.
func peerUID(nc net.Conn) uint32 {
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		return uint32(os.Geteuid())
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return uint32(os.Geteuid())
	}
	uid := uint32(os.Geteuid())
	_ = raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			uid = cred.Uid
		}
	})
	return uid
}
