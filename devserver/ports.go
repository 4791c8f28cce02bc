package devserver

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"github.com/schooner-ml/schooner/internal/netaddr"
)

// PortInUseError says which port is taken and which flag moves it, so `schooner dev` can
// print one clear line instead of a gRPC stack.
type PortInUseError struct {
	What string
	Addr string
	Flag string
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("%s port %s is already in use (another schooner dev or temporal server running?); choose another with %s", e.What, e.Addr, e.Flag)
}

// checkFree fails when ip:port cannot be bound. The listener is closed at once: there is a
// short window before the real server binds, which is acceptable for a developer tool and
// far better than the UI library's os.Exit on a bind error.
func checkFree(ip string, port int, what, flag string) error {
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return &PortInUseError{What: what, Addr: addr, Flag: flag}
		}
		return fmt.Errorf("binding %s port %s: %w", what, addr, err)
	}
	return ln.Close()
}

// FreePort returns a port that is free on ip right now, below the kernel's ephemeral range
// where it can (netaddr.FreePort says why).
func FreePort(ip string) (int, error) { return netaddr.FreePort(ip) }
