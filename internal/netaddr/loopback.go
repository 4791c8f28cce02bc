// Package netaddr holds the one rule schooner's listeners share for which addresses only this
// machine can reach.
package netaddr

import "net"

// IsLoopback reports whether host (a name or an IP, as net.SplitHostPort returns it) is
// reachable from this machine only: "localhost" or a loopback IP. Other names are not
// resolved: a name that resolves to loopback today may not tomorrow.
func IsLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}
