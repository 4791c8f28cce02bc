//go:build !linux

package agent

import (
	"net"
	"os"
)

// peerUID is the agent's own user where the peer's credentials are not available.
func peerUID(net.Conn) uint32 { return uint32(os.Geteuid()) }
