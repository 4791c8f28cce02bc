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

// portPicker is FreePort's shape, so tests can hand out ports of their choosing.
type portPicker func(ip string) (int, error)

// freePortExcept is a port from pick that is not in taken, and is added to it. The server's
// internal ports are picked before any is bound, so each is free when picked and FreePort can
// give the same one twice, or the user's own port, which the test harness also picks free:
// the frontend and the HTTP API then met on one port ("address already in use" on the user's
// port, which is not retried).
func freePortExcept(pick portPicker, ip string, taken map[int]bool) (int, error) {
	for range 32 {
		p, err := pick(ip)
		if err != nil {
			return 0, err
		}
		if !taken[p] {
			taken[p] = true
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free port on %s apart from the %d already taken", ip, len(taken))
}

// FreePortExcept is FreePort, never a port in taken (ports picked and not bound yet), and the
// port returned is added to taken.
func FreePortExcept(ip string, taken map[int]bool) (int, error) {
	return freePortExcept(FreePort, ip, taken)
}
