package netaddr

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePort returns a port that is free on ip right now, chosen below the kernel's ephemeral
// range where it can. The port is bound only later, by the server; a port the kernel hands out
// for listening comes from the ephemeral range, from which every process's next outgoing
// connection also takes its port, and one did take an embedded server's internal port in that
// window (a CI flake that crashed the server inside Temporal's worker service). Below the range
// only another process choosing the same way at random could take it.
func FreePort(ip string) (int, error) {
	lo, hi := quietPorts()
	for range 64 {
		p := lo + rand.IntN(hi-lo)
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(p)))
		if err == nil {
			return p, ln.Close()
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", ip, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// quietPorts is the range FreePort picks from: the 10000 ports below the kernel's ephemeral
// range (/proc/sys/net/ipv4/ip_local_port_range; Linux's default starts at 32768).
func quietPorts() (lo, hi int) {
	hi = 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if start, err := strconv.Atoi(f[0]); err == nil && start > 12000 {
				hi = start
			}
		}
	}
	return hi - 10000, hi
}
